import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// docs/architecture.md is the code map: every path it names exists, and the folders import only
// what its rules allow.

const MAP = readFileSync('docs/architecture.md', 'utf8');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** Relative imports of a file, resolved to repository paths. */
function importsOf(file: string): string[] {
  const source = readFileSync(file, 'utf8');
  return [...source.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)].map((match) =>
    relative('.', resolve(dirname(file), match[1]!)),
  );
}

/** What each folder may import besides itself (docs/architecture.md, "Folders"). */
const ALLOWED: Record<string, readonly string[]> = {
  'services/core': [],
  'services/gateway': ['services/core'],
  'services/worker': ['services/core'],
  'services/console': ['services/core'],
  'services/runtime': ['services/core', 'services/gateway', 'services/worker', 'services/console'],
  load: [],
  release: ['services/core'],
};

describe('docs/architecture.md', () => {
  it('names only paths that exist', () => {
    const named = [
      ...MAP.matchAll(/`((?:services|test|migrations|charts|load|bench|docs|release)\/[A-Za-z0-9_./-]*)`/g),
    ].map((match) => match[1]!);
    expect(named.length).toBeGreaterThan(50);
    expect(named.filter((path) => !existsSync(path.replace(/\/$/, '')))).toEqual([]);
  });

  it('names every folder of services/ and services/core/', () => {
    const folders = ['services', 'services/core'].flatMap((root) =>
      readdirSync(root)
        .filter((name) => statSync(join(root, name)).isDirectory())
        .map((name) => `${root}/${name}/`),
    );
    const missing = folders.filter(
      (folder) => !MAP.includes(`\`${folder}\``) && !MAP.includes(`\`${folder.split('/').at(-2)}/\``),
    );
    expect(missing).toEqual([]);
  });

  it.each(Object.entries(ALLOWED))('%s imports only itself and what the map allows', (folder, allowed) => {
    const outside = files(folder).flatMap((file) =>
      importsOf(file)
        .filter(
          (target) => !target.startsWith(`${folder}/`) && !allowed.some((a) => target.startsWith(`${a}/`)),
        )
        .map((target) => `${file} → ${target}`),
    );
    expect(outside).toEqual([]);
  });
});
