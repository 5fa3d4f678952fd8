import { afterAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../../services/console/security/passwords.ts';
import { freePort } from '../../services/core/db/embedded.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { reportLongWait } from '../support/long-wait.ts';
import {
  type Container,
  imageRoot,
  type LocalProcess,
  podSpec,
  prepare,
  probeUrl,
  startContainer,
} from './kubelet.ts';
import { find, type Manifest, render, scenarioFile } from './tools.ts';

// The chart's console (ci/console-values.yaml), rendered and started as a local process exactly
// as rendered (kubelet.ts): its users file from the users Secret's volume, its session key from
// the release's Secret, probes on its own port, a password sign-in over HTTP, SIGTERM.
const SIGNING_SECRET = 'whsec_test_stripe_secret_for_hookgate';
const SESSION_SECRET = 'chart-console-session-secret-0123456789abcdef';
const PASSWORD = 'a chart console password';

let db: TestDatabase | undefined;
let console_: LocalProcess | undefined;

afterAll(async () => {
  console_?.child.kill('SIGKILL');
  await db?.drop();
});

const encode = (text: string) => Buffer.from(text).toString('base64');
const secret = (name: string, data: Record<string, string>): Manifest =>
  ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name },
    data: Object.fromEntries(Object.entries(data).map(([key, value]) => [key, encode(value)])),
  }) as Manifest;

function portOf(container: Container, name: string): number {
  const port = container.ports?.find((candidate) => candidate.name === name)?.containerPort;
  if (port === undefined) throw new Error(`${container.name} has no port named ${name}`);
  return port;
}

/** Waits for a state, bounded generously: a busy machine starts the process slowly. */
async function until(label: string, check: () => Promise<boolean>, timeoutMs = 180_000): Promise<void> {
  const started = Date.now();
  const deadline = started + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${label}: ${console_?.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  reportLongWait(label, Date.now() - started, timeoutMs);
}

describe('the chart console, rendered and run as a local process', () => {
  it('serves sign-in with the users Secret and the session key, probes on its port, stops on SIGTERM', async () => {
    db = await createTestDatabase();
    const manifests = await render({ valuesFiles: [scenarioFile('console-values.yaml')] });
    manifests.push(
      secret('hookgate-secrets', {
        DATABASE_URL: db.url,
        STRIPE_WEBHOOK_SECRET: SIGNING_SECRET,
        CONSOLE_SESSION_SECRET: SESSION_SECRET,
      }),
      secret('hookgate-console-users', { users: `alice:${await hashPassword(PASSWORD)}\n` }),
    );
    const deployment = find(manifests, 'Deployment', 'hookgate-console');
    const pod = podSpec(deployment);
    expect(pod.containers).toHaveLength(1);
    const container = pod.containers[0]!;
    const env = (name: string) => container.env?.find((variable) => variable.name === name)?.value;
    expect(env('CONSOLE_PORT')).toBe(String(portOf(container, 'http')));
    expect(env('METRICS_PORT')).toBe(String(portOf(container, 'metrics')));
    // The Service routes its port to the console's.
    const service = find(manifests, 'Service', 'hookgate-console');
    expect((service.spec as { ports: { targetPort: string }[] }).ports[0]?.targetPort).toBe('http');

    const local = { http: await freePort(), metrics: await freePort() };
    const prepared = prepare(manifests, pod, container, 'hookgate-console-x', {
      CONSOLE_PORT: String(local.http),
      METRICS_PORT: String(local.metrics),
    });
    expect(prepared.argv.slice(1, 5)).toEqual(['services/cli/main.ts', 'serve', '--role', 'console']);
    expect(prepared.env.CONSOLE_USERS_FILE).toBe(`${prepared.mounts['/etc/hookgate-console']}/users`);
    console_ = startContainer(prepared, imageRoot());
    const ports = { [portOf(container, 'http')]: local.http, [portOf(container, 'metrics')]: local.metrics };
    for (const probe of [container.startupProbe, container.readinessProbe, container.livenessProbe]) {
      if (!probe) throw new Error('the console lacks a probe');
      await until(
        probe.httpGet.path,
        async () => (await fetch(probeUrl(container, probe, ports))).status === 200,
      );
    }

    // A password sign-in, as a browser does it: the form's nonce cookie and CSRF token, then the session.
    const base = `http://127.0.0.1:${local.http}`;
    const form = await fetch(`${base}/login`);
    const nonce = /__Host-hookgate_login=([^;]+)/.exec(form.headers.get('set-cookie') ?? '')?.[1];
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1];
    expect(nonce && csrf).toBeTruthy();
    const signIn = await fetch(`${base}/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        cookie: `__Host-hookgate_login=${nonce}`,
      },
      body: new URLSearchParams({ _csrf: csrf!, next: '/', user: 'alice', password: PASSWORD }).toString(),
    });
    expect(signIn.status).toBe(303);
    const session = /__Host-hookgate_session=([^;]+)/.exec(signIn.headers.get('set-cookie') ?? '')?.[1];
    expect(session).toBeTruthy();
    const overview = await fetch(base, { headers: { cookie: `__Host-hookgate_session=${session}` } });
    expect(overview.status).toBe(200);
    expect(await overview.text()).toContain('<span class="user">alice</span>');

    const started = Date.now();
    console_.child.kill('SIGTERM');
    const exit = await console_.exited();
    expect(exit.code, console_.output()).toBe(0);
    expect((exit.at - started) / 1000).toBeLessThan(pod.terminationGracePeriodSeconds ?? 30);
    for (const text of [PASSWORD, SESSION_SECRET, SIGNING_SECRET])
      expect(console_.output()).not.toContain(text);
  }, 600_000);
});
