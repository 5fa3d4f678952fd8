import { type ChildProcess, spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ROOT } from '../support/process.ts';
import type { Manifest } from './tools.ts';

// A small stand-in for the kubelet: it turns a rendered container into a local process the way
// Kubernetes would start it from the image. What it maps, and nothing more:
// - the image: WORKDIR /app is a temp directory holding what the Dockerfile copies (package.json,
//   services/, migrations/, and node_modules/ linked), `node` is the pinned Node.js, and the image's
//   own environment (Dockerfile ENV NODE_ENV=production, PATH) is added; nothing else of the
//   test runner's environment leaks in;
// - env: envFrom (Secret/ConfigMap: every key), then env (value, secretKeyRef, configMapKeyRef,
//   fieldRef metadata.name), with $(VAR) expansion in values, command and args, as Kubernetes does;
// - volumes: configMap and secret volumes are written to a temp dir, emptyDirs are temp dirs, and an argument
//   or env value under a mount path points at the temp dir instead;
// - `overrides` replaces env values the caller names (the tests use it only for PORT and
//   METRICS_PORT, with free loopback ports, after checking they are the rendered container ports).

export interface Container {
  readonly name: string;
  readonly command?: string[];
  readonly args?: string[];
  readonly env?: EnvVar[];
  readonly envFrom?: { secretRef?: { name: string }; configMapRef?: { name: string } }[];
  readonly ports?: { name: string; containerPort: number }[];
  readonly volumeMounts?: { name: string; mountPath: string }[];
  readonly readinessProbe?: Probe;
  readonly livenessProbe?: Probe;
  readonly startupProbe?: Probe;
  readonly lifecycle?: { preStop?: { exec?: { command: string[] } } };
}

export interface Probe {
  readonly httpGet: { path: string; port: string | number };
}

interface EnvVar {
  readonly name: string;
  readonly value?: string;
  readonly valueFrom?: {
    secretKeyRef?: { name: string; key: string };
    configMapKeyRef?: { name: string; key: string };
    fieldRef?: { fieldPath: string };
  };
}

export interface PodSpec {
  readonly containers: Container[];
  readonly volumes?: {
    name: string;
    configMap?: { name: string };
    secret?: { secretName: string; items?: { key: string; path: string }[] };
    emptyDir?: unknown;
  }[];
  readonly terminationGracePeriodSeconds?: number;
}

/** The pod spec of a Deployment, Job or Pod. */
export function podSpec(manifest: Manifest): PodSpec {
  if (manifest.kind === 'Pod') return manifest.spec as PodSpec;
  const spec = manifest.spec as { template: { spec: PodSpec } };
  return spec.template.spec;
}

function dataOf(
  manifests: readonly Manifest[],
  kind: 'Secret' | 'ConfigMap',
  name: string,
): Record<string, string> {
  const found = manifests.find((manifest) => manifest.kind === kind && manifest.metadata.name === name);
  if (!found) throw new Error(`${kind} ${name} is referenced but not rendered`);
  const data = (found.data ?? {}) as Record<string, string>;
  if (kind === 'ConfigMap') return { ...data };
  return Object.fromEntries(
    Object.entries(data).map(([key, value]) => [key, Buffer.from(value, 'base64').toString('utf8')]),
  );
}

const expand = (text: string, env: Record<string, string>): string =>
  text.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name: string) => env[name] ?? whole);

export interface Prepared {
  readonly argv: string[];
  readonly env: Record<string, string>;
  readonly mounts: Record<string, string>;
}

export function prepare(
  manifests: readonly Manifest[],
  pod: PodSpec,
  container: Container,
  podName: string,
  overrides: Record<string, string> = {},
): Prepared {
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) {
    if (source.secretRef) Object.assign(env, dataOf(manifests, 'Secret', source.secretRef.name));
    if (source.configMapRef) Object.assign(env, dataOf(manifests, 'ConfigMap', source.configMapRef.name));
  }
  for (const variable of container.env ?? []) {
    const from = variable.valueFrom;
    let value: string | undefined;
    if (variable.value !== undefined) value = expand(variable.value, env);
    else if (from?.secretKeyRef)
      value = dataOf(manifests, 'Secret', from.secretKeyRef.name)[from.secretKeyRef.key];
    else if (from?.configMapKeyRef)
      value = dataOf(manifests, 'ConfigMap', from.configMapKeyRef.name)[from.configMapKeyRef.key];
    else if (from?.fieldRef?.fieldPath === 'metadata.name') value = podName;
    if (value === undefined) throw new Error(`env ${variable.name} of ${container.name} does not resolve`);
    env[variable.name] = value;
  }
  Object.assign(env, overrides);

  const mounts: Record<string, string> = {};
  const root = mkdtempSync(join(tmpdir(), `hookgate-pod-${container.name}-`));
  for (const mount of container.volumeMounts ?? []) {
    const volume = pod.volumes?.find((candidate) => candidate.name === mount.name);
    if (!volume) throw new Error(`volume ${mount.name} of ${container.name} is not in the pod`);
    const dir = join(root, mount.name);
    mkdirSync(dir, { recursive: true });
    if (volume.configMap) {
      for (const [key, text] of Object.entries(dataOf(manifests, 'ConfigMap', volume.configMap.name))) {
        writeFileSync(join(dir, key), text);
      }
    } else if (volume.secret) {
      // A Secret's keys as files (only `items`, at their paths, when listed), decoded.
      const data = dataOf(manifests, 'Secret', volume.secret.secretName);
      const items = volume.secret.items ?? Object.keys(data).map((key) => ({ key, path: key }));
      for (const item of items) {
        const text = data[item.key];
        if (text === undefined) throw new Error(`volume ${mount.name}: Secret has no key ${item.key}`);
        writeFileSync(join(dir, item.path), text);
      }
    } else if (!volume.emptyDir) {
      throw new Error(`volume ${mount.name}: only configMap, secret and emptyDir volumes are mapped`);
    }
    mounts[mount.mountPath] = dir;
  }
  const remap = (text: string): string => {
    for (const [mountPath, dir] of Object.entries(mounts)) {
      if (text === mountPath || text.startsWith(`${mountPath}/`)) return dir + text.slice(mountPath.length);
    }
    return text;
  };
  for (const [name, value] of Object.entries(env)) env[name] = remap(value);

  const argv = [...(container.command ?? []), ...(container.args ?? [])].map((part) =>
    remap(expand(part, env)),
  );
  return { argv, env, mounts };
}

export interface LocalProcess {
  readonly child: ChildProcess;
  output(): string;
  exited(): Promise<{ code: number | null; signal: string | null; at: number }>;
}

/**
 * The image's /app: what the Dockerfile copies, so a process that wrote into its working
 * directory (where the image's root filesystem is read-only) shows up in `filesUnder`.
 */
export function imageRoot(): string {
  const app = mkdtempSync(join(tmpdir(), 'hookgate-image-app-'));
  for (const entry of ['package.json', 'services', 'migrations']) {
    cpSync(join(ROOT, entry), join(app, entry), { recursive: true });
  }
  symlinkSync(resolve(ROOT, 'node_modules'), join(app, 'node_modules'));
  return app;
}

/** Every file and directory under `dir` (not following node_modules), with its modification time. */
export function filesUnder(dir: string): Record<string, number> {
  const found: Record<string, number> = {};
  const walk = (path: string, relative: string) => {
    for (const entry of readdirSync(path)) {
      if (relative === '' && entry === 'node_modules') continue;
      const full = join(path, entry);
      const stats = statSync(full);
      found[`${relative}${entry}`] = stats.mtimeMs;
      if (stats.isDirectory()) walk(full, `${relative}${entry}/`);
    }
  };
  walk(dir, '');
  return found;
}

/** Starts a prepared container as the image would run it, in `app` (the image's WORKDIR). */
export function startContainer(prepared: Prepared, app: string): LocalProcess {
  const [command, ...args] = prepared.argv;
  if (command !== 'node') throw new Error(`the image runs node, not ${command}`);
  const child = spawn(process.execPath, args, {
    cwd: app,
    // The image's ENV plus the container's env: nothing else of this test's environment.
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', NODE_ENV: 'production', ...prepared.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  const exit = new Promise<{ code: number | null; signal: string | null; at: number }>((resolveExit) => {
    child.on('exit', (code, signal) => resolveExit({ code, signal, at: Date.now() }));
  });
  return { child, output: () => text, exited: () => exit };
}

/** The local port behind a probe's named (or numbered) container port, after the env overrides. */
export function probeUrl(container: Container, probe: Probe, localPorts: Record<number, number>): string {
  const { port, path } = probe.httpGet;
  const containerPort =
    typeof port === 'number'
      ? port
      : container.ports?.find((candidate) => candidate.name === port)?.containerPort;
  if (containerPort === undefined) throw new Error(`probe port ${port} is not a port of ${container.name}`);
  const local = localPorts[containerPort];
  if (local === undefined) throw new Error(`container port ${containerPort} has no local port`);
  return `http://127.0.0.1:${local}${path}`;
}
