import { readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ROOT } from '../support/process.ts';
import { CHART, find, render, scenarioFile } from './tools.ts';

// The Dockerfile against what the chart expects of it, without building it (make image builds and
// runs it: test/k8s/image.test.ts): the user the pods run as, the working directory and
// entrypoint the chart's commands rely on, and that production dependencies alone can load
// every module hookgate imports.
const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
const finalStage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
const instruction = (stage: string, name: string): string[] =>
  [...stage.matchAll(new RegExp(`^${name} (.+)$`, 'gm'))].map((match) => (match[1] as string).trim());

describe('the container image (Dockerfile)', () => {
  it("runs as a numeric non-root user equal to the chart's runAsUser", () => {
    const users = instruction(finalStage, 'USER');
    expect(users).toHaveLength(1);
    const [uid, gid] = (users[0] as string).split(':');
    expect(uid).toMatch(/^[1-9][0-9]*$/);
    const values = parse(readFileSync(join(CHART, 'values.yaml'), 'utf8'));
    expect(values.podSecurityContext.runAsUser).toBe(Number(uid));
    expect(values.securityContext.runAsUser).toBe(Number(uid));
    expect(values.podSecurityContext.runAsGroup).toBe(Number(gid));
  });

  it('builds on node:24 slim with production dependencies only, and ships from scratch', () => {
    const froms = instruction(dockerfile, 'FROM');
    expect(froms.length).toBeGreaterThanOrEqual(2);
    for (const from of froms.slice(0, -1)) expect(from).toMatch(/^node:24-[a-z]+-slim\b/);
    // The final stage holds node and its libraries, copied: no shell, no npm (make image checks
    // the built image itself: test/k8s/image.test.ts).
    expect(froms.at(-1)).toBe('scratch');
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
    expect(finalStage).not.toMatch(/npm (ci|install)/);
  });

  it("has the WORKDIR and ENTRYPOINT the chart's commands assume", async () => {
    expect(instruction(finalStage, 'WORKDIR')).toEqual(['/app']);
    const entrypoint = JSON.parse(instruction(finalStage, 'ENTRYPOINT')[0] as string) as string[];
    expect(entrypoint).toEqual(['node', 'services/cli/main.ts']);
    expect(instruction(finalStage, 'COPY')).toEqual(
      expect.arrayContaining(['services ./services', 'migrations ./migrations']),
    );
    const manifests = await render({ valuesFiles: [scenarioFile('default-values.yaml')] });
    for (const [kind, name] of [
      ['Deployment', 'hookgate-gateway'],
      ['Deployment', 'hookgate-worker'],
      ['Job', 'hookgate-migrate'],
    ] as const) {
      const spec = find(manifests, kind, name).spec as {
        template: { spec: { containers: { command: string[] }[] } };
      };
      expect(spec.template.spec.containers[0]?.command).toEqual(entrypoint);
    }
  });

  it('needs nothing from devDependencies at run time (every package services/ imports is a dependency)', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir)) {
        const path = join(dir, entry);
        if (statSync(path).isDirectory()) walk(path);
        else if (path.endsWith('.ts')) files.push(path);
      }
    };
    walk(join(ROOT, 'services'));
    const imported = new Set<string>();
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      for (const match of text.matchAll(
        /(?:^import (?!type )[^'"]*from |import\()['"]([^'".][^'"]*)['"]/gm,
      )) {
        const specifier = match[1] as string;
        const name = specifier.startsWith('@')
          ? specifier.split('/').slice(0, 2).join('/')
          : specifier.split('/')[0];
        if (name && !name.startsWith('node:') && !builtinModules.includes(name)) imported.add(name);
      }
    }
    expect(imported.size).toBeGreaterThan(5);
    const missing = [...imported].filter((name) => !(name in pkg.dependencies));
    expect(missing).toEqual([]);
  });

  it('.dockerignore lets only the package files, services/ and migrations/ into the build', () => {
    const lines = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .filter((line) => line && !line.startsWith('#'));
    expect(lines).toEqual(['*', '!package.json', '!package-lock.json', '!services/', '!migrations/']);
  });
});
