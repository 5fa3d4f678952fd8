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

/**
 * The layers of services/core/, bottom to top (docs/architecture.md, "Layers inside
 * services/core/"); `.` is core's own files. A folder imports its own files and the layers below
 * its own, never a folder of its own layer or of one above, so no two folders can import each
 * other, directly or round a loop.
 */
const CORE_LAYERS: readonly (readonly string[])[] = [
  ['.'],
  ['providers'],
  ['config'],
  ['db'],
  ['queue', 'attempts', 'audit', 'api'],
  ['inbox', 'pause'],
  ['handlers', 'quarantine', 'replay'],
  ['reconcile'],
  ['read-models'],
  ['destinations'],
  ['apply', 'retention', 'migrate'],
];

const CORE = 'services/core';

/** The folder of services/core/ a path is in; `.` for core's own files. */
function coreFolderOf(path: string): string {
  const parts = relative(CORE, path).split('/');
  return parts.length === 1 ? '.' : parts[0]!;
}

/** The layers as the map lists them: each numbered line's folders, `services/core/*.ts` as `.`. */
function documentedLayers(): string[][] {
  const section = MAP.split(/^#+ /m).find((part) => part.startsWith('Layers inside `services/core/`'));
  return (section ?? '')
    .split('\n')
    .filter((line) => /^\d+\. /.test(line))
    .map((line) => [
      ...(line.includes('`services/core/*.ts`') ? ['.'] : []),
      ...[...line.matchAll(/`([a-z-]+)\/`/g)].map((match) => match[1]!),
    ]);
}

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

  it('shows the layers of services/core/ as the fence below holds them', () => {
    expect(documentedLayers()).toEqual(CORE_LAYERS);
  });

  it('places every folder of services/core/ in one layer', () => {
    const folders = readdirSync(CORE).filter((name) => statSync(join(CORE, name)).isDirectory());
    expect(CORE_LAYERS.flat().sort()).toEqual(['.', ...folders].sort());
  });

  it('lets a folder of services/core/ import only from the layers below its own', () => {
    const layerOf = new Map(
      CORE_LAYERS.flatMap((layer, index) => layer.map((folder) => [folder, index] as const)),
    );
    const upward = files(CORE).flatMap((file) => {
      const from = coreFolderOf(file);
      return importsOf(file)
        .filter((target) => target.startsWith(`${CORE}/`))
        .filter((target) => {
          const to = coreFolderOf(target);
          return to !== from && !((layerOf.get(to) ?? Infinity) < (layerOf.get(from) ?? -Infinity));
        })
        .map((target) => `${file} → ${target}`);
    });
    expect(upward).toEqual([]);
  });
});
