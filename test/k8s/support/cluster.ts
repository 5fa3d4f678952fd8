import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from '../../support/process.ts';
import { podmanOk } from './podman.ts';

// The one-node cluster `make cluster-up` started (test/k8s/cluster/cluster.sh), driven as a user
// drives one: kubectl, helm, and containerd for the images (there is no registry).

const STATE = process.env.CLUSTER_STATE ?? join(ROOT, '.k8s');
const KUBE_BIN = process.env.KUBE_BIN ?? join(ROOT, '.tools/bin');
export const KUBECONFIG = process.env.KUBECONFIG ?? join(STATE, 'pki/admin.kubeconfig');
export const CHART = join(ROOT, 'charts/hookgate');
export const CRDS = join(ROOT, 'test/chart/crds');
/** The machine's address on the cluster's bridge: where pods reach the test's PostgreSQL. */
export const NODE_IP = '10.244.77.1';

export interface Finished {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  /** Seconds the command took. */
  readonly seconds: number;
}

export function run(command: string, args: readonly string[], input?: string): Promise<Finished> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      env: { ...process.env, KUBECONFIG },
      stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    child.on('error', reject);
    child.on('exit', (code) =>
      resolve({ code: code ?? -1, stdout, stderr, seconds: (Date.now() - started) / 1000 }),
    );
    if (input !== undefined) child.stdin?.end(input);
  });
}

async function ok(command: string, args: readonly string[], input?: string): Promise<string> {
  const result = await run(command, args, input);
  if (result.code !== 0) {
    throw new Error(`${command} ${args.join(' ')} exited ${result.code}:\n${result.stdout}${result.stderr}`);
  }
  return result.stdout;
}

export const kubectl = (args: readonly string[], input?: string) =>
  run(join(KUBE_BIN, 'kubectl'), args, input);
export const kubectlOk = (args: readonly string[], input?: string) =>
  ok(join(KUBE_BIN, 'kubectl'), args, input);
const HELM = join(ROOT, '.tools/bin/helm');
export const helm = (args: readonly string[]) => run(HELM, args);
export const helmOk = (args: readonly string[]) => ok(HELM, args);

/** A namespace that enforces (and warns about) the PodSecurity `restricted` standard. */
export async function restrictedNamespace(name: string): Promise<void> {
  await kubectl(['delete', 'namespace', name, '--ignore-not-found', '--wait=true', '--timeout=120s']);
  await kubectlOk(['create', 'namespace', name]);
  await kubectlOk([
    'label',
    'namespace',
    name,
    'pod-security.kubernetes.io/enforce=restricted',
    'pod-security.kubernetes.io/warn=restricted',
    'pod-security.kubernetes.io/audit=restricted',
  ]);
}

/** The vendored CRDs (test/chart/crds), so that the chart's custom resources are accepted. */
export async function installCrds(): Promise<void> {
  await kubectlOk(['apply', '--server-side', '-f', CRDS]);
  await kubectlOk(['wait', '--for=condition=Established', 'crd', '--all', '--timeout=120s']);
}

/**
 * The image podman built, under `tag` too, imported into containerd (there is no registry: the
 * chart's pods use pullPolicy Never). Returns the image reference.
 */
export async function loadImage(image: string, tag?: string): Promise<string> {
  const reference = tag ? `${image.replace(/:[^:/]+$/, '')}:${tag}` : image;
  if (tag) await podmanOk(['tag', image, reference]);
  const archive = join(STATE, `image-${process.pid}.tar`);
  await podmanOk(['save', '--format', 'docker-archive', '--output', archive, reference]);
  await ok('ctr', [
    '--address',
    join(STATE, 'containerd/containerd.sock'),
    '--namespace',
    'k8s.io',
    'images',
    'import',
    archive,
  ]);
  await ok('rm', ['-f', archive]);
  return reference;
}

export interface PodState {
  readonly name: string;
  readonly component: string;
  readonly phase: string;
  readonly ready: boolean;
  /** ms from the container's start to the pod's Ready condition, when both are known. */
  readonly startToReadyMs: number | null;
  readonly restarts: number;
  /** The image the pod's spec names (containerd reports one name for tags of the same image). */
  readonly image: string;
}

interface PodJson {
  metadata: { name: string; labels?: Record<string, string>; deletionTimestamp?: string };
  spec: { containers: { image: string }[] };
  status: {
    phase: string;
    conditions?: { type: string; status: string; lastTransitionTime: string }[];
    containerStatuses?: {
      ready: boolean;
      restartCount: number;
      state: { running?: { startedAt: string } };
    }[];
  };
}

export async function pods(namespace: string, selector = ''): Promise<PodState[]> {
  const text = await kubectlOk([
    '-n',
    namespace,
    'get',
    'pods',
    '-o',
    'json',
    ...(selector ? ['-l', selector] : []),
  ]);
  // Pods being deleted are on their way out: not counted.
  const items = (JSON.parse(text) as { items: PodJson[] }).items.filter(
    (pod) => !pod.metadata.deletionTimestamp,
  );
  return items.map((pod) => {
    const container = pod.status.containerStatuses?.[0];
    const ready = pod.status.conditions?.find((c) => c.type === 'Ready');
    const startedAt = container?.state.running?.startedAt;
    return {
      name: pod.metadata.name,
      component: pod.metadata.labels?.['app.kubernetes.io/component'] ?? '',
      phase: pod.status.phase,
      ready: ready?.status === 'True',
      startToReadyMs:
        ready?.status === 'True' && startedAt
          ? Date.parse(ready.lastTransitionTime) - Date.parse(startedAt)
          : null,
      restarts: container?.restartCount ?? 0,
      image: pod.spec.containers[0]?.image ?? '',
    };
  });
}

/** Waits (up to `seconds`) until `check` holds, polling once a second. */
export async function until<T>(
  what: string,
  seconds: number,
  check: () => Promise<T | null | false>,
): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = await check().catch(() => null);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${seconds}s`);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}
