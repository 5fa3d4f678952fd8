import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../services/core/db/embedded.ts';
import { type SystemCluster, startSystemCluster } from '../support/system-postgres.ts';
import { IMAGE, podman, podmanOk } from './support/podman.ts';

// The image as users run it (`make image` builds it, then runs this file): read-only root
// filesystem, uid 10001, every capability dropped, no privilege escalation, a config file
// mounted read-only, /tmp the only writable path (the chart's emptyDir). migrate, each role of
// serve, a signed test delivery accepted and settled, SIGTERM drained to exit 0.

const MAX_IMAGE_BYTES = 200_000_000;
const secret = `whsec_${randomBytes(24).toString('base64')}`;
const consoleToken = randomBytes(24).toString('hex');
const sessionSecret = randomBytes(36).toString('base64');
let postgres: SystemCluster;
let configDir: string;
const started: string[] = [];

const CONFIG = `endpoints:
  smoke:
    provider: standard-webhooks
    secrets:
      - \${SMOKE_WEBHOOK_SECRET}
    handler: record
console:
  tokens:
    - name: smoke
      sha256: ${createHash('sha256').update(consoleToken).digest('hex')}
`;

/** `podman run` as the chart runs the pods. */
function runArgs(name: string, env: Record<string, string>, detach: boolean): string[] {
  return [
    'run',
    ...(detach ? ['--detach'] : ['--rm']),
    '--name',
    name,
    '--network=host',
    '--read-only',
    '--read-only-tmpfs=false',
    '--tmpfs=/tmp:rw,size=64m,mode=1777',
    '--user=10001:10001',
    '--cap-drop=ALL',
    '--security-opt=no-new-privileges',
    `--volume=${configDir}:/etc/hookgate:ro`,
    '--env=HOOKGATE_CONFIG=/etc/hookgate/hookgate.yaml',
    `--env=DATABASE_URL=${postgres.url}`,
    `--env=SMOKE_WEBHOOK_SECRET=${secret}`,
    ...Object.entries(env).map(([key, value]) => `--env=${key}=${value}`),
    IMAGE,
  ];
}

async function waitUntilReady(url: string, name: string): Promise<number> {
  for (;;) {
    const answer = await fetch(url).catch(() => null);
    if (answer?.status === 200) return Date.now();
    const state = (await podmanOk(['inspect', '--format', '{{.State.Status}}', name])).trim();
    if (state !== 'running') throw new Error(`${name} is ${state}:\n${await logs(name)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function logs(name: string): Promise<string> {
  const { stdout, stderr } = await podman(['logs', name]);
  return stdout + stderr;
}

interface Served {
  readonly name: string;
  /** ms from the container's start to its first log line, and to an answered /readyz. */
  readonly firstLogMs: number;
  readonly readyMs: number;
}

async function serve(role: string, env: Record<string, string>, readyPort: string): Promise<Served> {
  const name = `hookgate-smoke-${role}-${process.pid}`;
  started.push(name);
  await podmanOk([...runArgs(name, { ...env, LOG_LEVEL: 'info' }, true), 'serve', '--role', role]);
  const readyAt = await waitUntilReady(`http://127.0.0.1:${readyPort}/readyz`, name);
  const startedAt = Date.parse(
    (await podmanOk(['inspect', '--format', '{{.State.StartedAt}}', name]))
      .trim()
      .replace(/ \+0000 UTC$/, 'Z'),
  );
  const first = JSON.parse((await logs(name)).split('\n')[0] as string) as { time: string };
  return { name, firstLogMs: Date.parse(first.time) - startedAt, readyMs: readyAt - startedAt };
}

async function stop(name: string): Promise<{ code: number; output: string }> {
  await podmanOk(['kill', '--signal', 'TERM', name]);
  const code = Number((await podmanOk(['wait', name])).trim());
  return { code, output: await logs(name) };
}

beforeAll(async () => {
  postgres = await startSystemCluster(15);
  configDir = mkdtempSync(join(tmpdir(), 'hookgate-image-'));
  chmodSync(configDir, 0o755); // the container's user is 10001, not the test's
  writeFileSync(join(configDir, 'hookgate.yaml'), CONFIG, { mode: 0o644 });
}, 120_000);

afterAll(async () => {
  for (const name of started) await podman(['rm', '--force', '--time', '0', name]);
  await postgres?.stop();
  if (configDir) rmSync(configDir, { recursive: true, force: true });
});

describe(`the image ${IMAGE}`, () => {
  it(`is at most ${MAX_IMAGE_BYTES / 1e6} MB, and holds node but no shell and no npm`, async () => {
    const size = Number((await podmanOk(['image', 'inspect', '--format', '{{.Size}}', IMAGE])).trim());
    console.log(JSON.stringify({ image: IMAGE, bytes: size, mb: Math.round(size / 1e5) / 10 }));
    expect(size).toBeLessThanOrEqual(MAX_IMAGE_BYTES);
    const probe = await podmanOk([
      'run',
      '--rm',
      '--network=none',
      '--entrypoint=node',
      IMAGE,
      '-p',
      "['/bin/sh', '/usr/local/lib/node_modules/npm', '/usr/local/bin/npm', '/usr/bin/apt-get'].filter((p) => require('fs').existsSync(p)).join(',') || 'none'",
    ]);
    expect(probe.trim()).toBe('none');
  });

  it('answers --version at once', async () => {
    const version = await podmanOk(['run', '--rm', '--network=none', '--read-only', IMAGE, '--version']);
    expect(version.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('runs migrate, each role of serve, a signed delivery to settled, and drains on SIGTERM', async () => {
    const migrated = await podman([
      ...runArgs(`hookgate-smoke-migrate-${process.pid}`, {}, false),
      'migrate',
    ]);
    expect(migrated.code, migrated.stdout + migrated.stderr).toBe(0);

    const [gatewayPort, gatewayMetrics, workerMetrics, consolePort, consoleMetrics] = await Promise.all(
      Array.from({ length: 5 }, () => freePort()),
    );
    const gateway = await serve(
      'gateway',
      { PORT: String(gatewayPort), METRICS_PORT: String(gatewayMetrics) },
      String(gatewayPort),
    );
    const worker = await serve('worker', { METRICS_PORT: String(workerMetrics) }, String(workerMetrics));
    const consoleServer = await serve(
      'console',
      {
        CONSOLE_PORT: String(consolePort),
        CONSOLE_SESSION_SECRET: sessionSecret,
        METRICS_PORT: String(consoleMetrics),
      },
      String(consolePort),
    );
    console.log(JSON.stringify({ started: [gateway, worker, consoleServer] }));

    const sent = await podman([
      ...runArgs(`hookgate-smoke-send-${process.pid}`, {}, false),
      'send-test',
      '--endpoint',
      'smoke',
      '--url',
      `http://127.0.0.1:${gatewayPort}`,
      '--wait',
      '60s',
    ]);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    expect(sent.stdout + sent.stderr).toMatch(/delivery: HTTP 200/);
    expect(sent.stdout + sent.stderr).toMatch(/event \S+: ignored/);

    for (const server of [gateway, worker, consoleServer]) {
      const stopped = await stop(server.name);
      expect(stopped.code, stopped.output).toBe(0);
      expect(stopped.output).toMatch(/stopped cleanly/);
      for (const text of [secret, consoleToken, sessionSecret]) expect(stopped.output).not.toContain(text);
    }
  });
});
