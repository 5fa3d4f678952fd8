import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { ROOT } from '../support/process.ts';

export const CHART = join(ROOT, 'charts/hookgate');
/** Upstream CRDs for kubectl-validate, vendored with their versions (test/chart/crds/README.md). */
export const CRDS = join(ROOT, 'test/chart/crds');
export const KUBE_VERSION = '1.30.0';

/** Built by `make tools` (go install, pinned versions) and linked here. */
export function tool(name: 'helm' | 'kubectl-validate' | 'helm-unittest'): string {
  const path = join(ROOT, '.tools/bin', name);
  if (!existsSync(path)) throw new Error(`${path} is missing: run "make tools" first`);
  return path;
}

export interface Result {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export function run(
  command: string,
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<Result> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('exit', (code) => resolvePromise({ code, stdout, stderr }));
  });
}

export const SCENARIOS = readdirSync(join(CHART, 'ci'))
  .filter((file) => file.endsWith('-values.yaml'))
  .sort();

export interface RenderOptions {
  readonly valuesFiles?: readonly string[];
  readonly set?: readonly string[];
  readonly showOnly?: readonly string[];
}

export function helmArgs(command: 'template' | 'lint', options: RenderOptions): string[] {
  const args =
    command === 'template'
      ? ['template', 'hookgate', CHART, '--namespace', 'hookgate', '--kube-version', KUBE_VERSION]
      : ['lint', '--strict', CHART, '--kube-version', KUBE_VERSION];
  for (const file of options.valuesFiles ?? []) args.push('-f', file);
  for (const value of options.set ?? []) args.push('--set', value);
  for (const template of options.showOnly ?? []) args.push('--show-only', template);
  return args;
}

export function helm(command: 'template' | 'lint', options: RenderOptions): Promise<Result> {
  return run(tool('helm'), helmArgs(command, options));
}

/** A rendered Kubernetes object, typed as loosely as YAML gives it. */
export interface Manifest {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  readonly [key: string]: unknown;
}

export function parseManifests(text: string): Manifest[] {
  return parseAllDocuments(text)
    .map((document) => {
      if (document.errors.length > 0) throw new Error(document.errors.map(String).join('\n'));
      return document.toJS() as Manifest | null;
    })
    .filter((manifest): manifest is Manifest => manifest !== null);
}

export async function render(options: RenderOptions): Promise<Manifest[]> {
  const result = await helm('template', options);
  if (result.code !== 0) throw new Error(`helm template failed:\n${result.stderr}`);
  return parseManifests(result.stdout);
}

export function find(manifests: readonly Manifest[], kind: string, name: string): Manifest {
  const found = manifests.find((manifest) => manifest.kind === kind && manifest.metadata.name === name);
  if (!found) {
    const have = manifests.map((manifest) => `${manifest.kind}/${manifest.metadata.name}`).join(', ');
    throw new Error(`no ${kind}/${name} in the rendered chart (have: ${have})`);
  }
  return found;
}

export const scenarioFile = (scenario: string): string => join(CHART, 'ci', scenario);
