import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { freePort } from '../../services/core/db/embedded.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, stripeEvent } from '../support/deliveries.ts';
import { reportLongWait } from '../support/long-wait.ts';
import {
  type Container,
  filesUnder,
  imageRoot,
  type LocalProcess,
  podSpec,
  prepare,
  probeUrl,
  startContainer,
} from './kubelet.ts';
import { find, type Manifest, render, scenarioFile } from './tools.ts';

// The proof that matters: the chart (default and existingSecret scenarios), rendered, started as
// local processes exactly as
// rendered (command, args, env with the Secret resolved, the mounted ConfigMap), in Helm's order
// (hooks by weight first), against a real PostgreSQL. See kubelet.ts for what is mapped.
//
// Port mapping: the rendered PORT and METRICS_PORT env values are checked to be the containers'
// declared ports, then replaced by free loopback ports (two pods cannot share 8080 on one host).
// The `helm test` Pod's --url names the gateway Service; it is checked to route its port to the
// gateway's `http` container port and then pointed at that local port.

const SIGNING_SECRET = 'whsec_test_stripe_secret_for_hookgate';
const ROTATED_OUT_SECRET = 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD';
const GITHUB_SECRET = 'shpss_test_secret_for_hookgate';

const running: LocalProcess[] = [];
const databases: TestDatabase[] = [];

afterAll(async () => {
  for (const process of running) process.child.kill('SIGKILL');
  for (const db of databases) await db.drop();
});

function valuesFile(values: unknown): string {
  const file = join(mkdtempSync(join(tmpdir(), 'hookgate-chart-values-')), 'values.yaml');
  writeFileSync(file, stringify(values));
  return file;
}

const annotations = (manifest: Manifest) => manifest.metadata.annotations ?? {};
const only = (containers: readonly Container[]): Container => {
  expect(containers).toHaveLength(1);
  return containers[0] as Container;
};

function portOf(container: Container, name: string): number {
  const port = container.ports?.find((candidate) => candidate.name === name)?.containerPort;
  if (port === undefined) throw new Error(`${container.name} has no port named ${name}`);
  return port;
}

function envValue(container: Container, name: string): string | undefined {
  return container.env?.find((variable) => variable.name === name)?.value;
}

/** Waits for a state, bounded generously: a busy machine starts these processes slowly. */
async function until<T>(label: string, check: () => Promise<T | null>, timeoutMs = 180_000): Promise<T> {
  const started = Date.now();
  const deadline = started + timeoutMs;
  for (;;) {
    const value = await check().catch(() => null);
    if (value !== null) {
      reportLongWait(label, Date.now() - started, timeoutMs);
      return value;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${label}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const statusOf = (url: string) =>
  fetch(url, { signal: AbortSignal.timeout(3_000) }).then((response) =>
    response.status === 200 ? 200 : null,
  );

interface Scenario {
  readonly valuesFiles: (db: TestDatabase) => string[];
  /** A Secret the user created before installing (existingSecret), if any. */
  readonly userSecret?: Manifest;
  /** The Stripe secret the test's own delivery is signed with. */
  readonly signWith: string;
  /** The endpoint the `helm test` Pod is expected to use. */
  readonly testEndpoint: string;
}

async function renderAndRun(scenario: Scenario, db: TestDatabase): Promise<void> {
  const manifests = await render({ valuesFiles: scenario.valuesFiles(db) });
  const app = imageRoot();
  // --- Helm's order: pre-install hooks by weight (a chart-made Secret, then the migration Job).
  const job = find(manifests, 'Job', 'hookgate-migrate');
  expect(annotations(job)['helm.sh/hook']).toBe('pre-install,pre-upgrade');
  // The Job's configuration is a hook too (the release's ConfigMap does not exist yet), made first.
  const jobConfig = find(manifests, 'ConfigMap', 'hookgate-migrate-config');
  expect(annotations(jobConfig)['helm.sh/hook']).toBe('pre-install,pre-upgrade');
  expect(Number(annotations(jobConfig)['helm.sh/hook-weight'])).toBeLessThan(
    Number(annotations(job)['helm.sh/hook-weight']),
  );
  expect(jobConfig.data).toEqual(find(manifests, 'ConfigMap', 'hookgate-config').data);
  if (scenario.userSecret) {
    // The user's Secret exists before the release; the chart makes none.
    expect(manifests.filter((manifest) => manifest.kind === 'Secret')).toEqual([]);
    manifests.push(scenario.userSecret);
  } else {
    const secret = find(manifests, 'Secret', 'hookgate');
    expect(annotations(secret)['helm.sh/hook']).toBe('pre-install,pre-upgrade');
    expect(Number(annotations(secret)['helm.sh/hook-weight'])).toBeLessThan(
      Number(annotations(job)['helm.sh/hook-weight']),
    );
  }

  const appFiles = filesUnder(app);
  expect(Object.keys(appFiles)).toContain('services/cli/main.ts');
  // Premise: the database starts empty, so the Job has real work.
  const before = await db.pool.query(`SELECT to_regclass('hookgate.inbox') AS inbox`);
  expect(before.rows[0].inbox).toBeNull();

  const jobPod = podSpec(job);
  const migrate = startContainer(
    prepare(manifests, jobPod, only(jobPod.containers), 'hookgate-migrate-x'),
    app,
  );
  running.push(migrate);
  const deadline = (job.spec as { activeDeadlineSeconds: number }).activeDeadlineSeconds;
  const migrated = await Promise.race([
    migrate.exited(),
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error('migration Job exceeded its deadline')), deadline * 1000),
    ),
  ]);
  expect(migrated.code, migrate.output()).toBe(0);
  // It checked the configuration the pods will read (mounted from its own hook ConfigMap) first.
  expect(migrate.output()).toMatch(/hookgate: \S+\/hookgate\.yaml is valid\n/);
  const after = await db.pool.query(`SELECT to_regclass('hookgate.inbox') AS inbox`);
  expect(after.rows[0].inbox).toBe('hookgate.inbox');

  // --- The Deployments, with their rendered ports replaced by free loopback ports.
  const gatewayPod = podSpec(find(manifests, 'Deployment', 'hookgate-gateway'));
  const workerPod = podSpec(find(manifests, 'Deployment', 'hookgate-worker'));
  const gateway = only(gatewayPod.containers);
  const worker = only(workerPod.containers);
  expect(envValue(gateway, 'PORT')).toBe(String(portOf(gateway, 'http')));
  expect(envValue(gateway, 'METRICS_PORT')).toBe(String(portOf(gateway, 'metrics')));
  expect(envValue(worker, 'METRICS_PORT')).toBe(String(portOf(worker, 'metrics')));
  expect(envValue(worker, 'PORT')).toBeUndefined();

  const gatewayPorts = { http: await freePort(), metrics: await freePort() };
  const workerMetrics = await freePort();
  const gatewayProcess = startContainer(
    prepare(manifests, gatewayPod, gateway, 'hookgate-gateway-x', {
      PORT: String(gatewayPorts.http),
      METRICS_PORT: String(gatewayPorts.metrics),
    }),
    app,
  );
  const workerPrepared = prepare(manifests, workerPod, worker, 'hookgate-worker-x', {
    METRICS_PORT: String(workerMetrics),
  });
  // The config reached the process as the mounted file, and its secret through the Secret's env.
  expect(workerPrepared.argv.slice(1)).toEqual([
    'services/cli/main.ts',
    'serve',
    '--role',
    'worker',
    '--config',
    `${workerPrepared.mounts['/etc/hookgate']}/hookgate.yaml`,
  ]);
  expect(workerPrepared.env.STRIPE_WEBHOOK_SECRET).toBe(SIGNING_SECRET);
  expect(workerPrepared.env.DATABASE_URL).toBe(db.url);
  const workerProcess = startContainer(workerPrepared, app);
  running.push(gatewayProcess, workerProcess);

  // --- Probes exactly as rendered: startup/readiness on /readyz, liveness on /healthz.
  const gatewayLocal = {
    [portOf(gateway, 'http')]: gatewayPorts.http,
    [portOf(gateway, 'metrics')]: gatewayPorts.metrics,
  };
  const workerLocal = { [portOf(worker, 'metrics')]: workerMetrics };
  for (const [container, local] of [
    [gateway, gatewayLocal],
    [worker, workerLocal],
  ] as const) {
    for (const probe of [container.startupProbe, container.readinessProbe, container.livenessProbe]) {
      if (!probe) throw new Error(`${container.name} lacks a probe`);
      await until(`${container.name} ${probe.httpGet.path}`, () =>
        statusOf(probeUrl(container, probe, local)),
      );
    }
    expect(container.readinessProbe?.httpGet.path).toBe('/readyz');
    expect(container.livenessProbe?.httpGet.path).toBe('/healthz');
  }

  // --- A signed event through the gateway, processed by the worker.
  const delivery = stripeEvent(scenario.signWith);
  const reply = await post(`http://127.0.0.1:${gatewayPorts.http}/webhooks/stripe`, delivery);
  expect(reply.status).toBe(200);
  await until('the event processed', async () => {
    const result = await db.pool.query(
      `SELECT status FROM hookgate.inbox WHERE endpoint = 'stripe' AND event_id = $1`,
      [delivery.eventId],
    );
    return result.rows[0]?.status === 'processed' ? true : null;
  });

  // --- `helm test`: the test Pod's command, its --url pointed at the gateway's local port.
  const testPod = find(manifests, 'Pod', 'hookgate-test');
  expect(annotations(testPod)['helm.sh/hook']).toBe('test');
  const testSpec = podSpec(testPod);
  const testContainer = only(testSpec.containers);
  const service = find(manifests, 'Service', 'hookgate-gateway');
  const servicePort = (
    service.spec as { ports: { name: string; port: number; targetPort: string }[] }
  ).ports.find((port) => port.name === 'webhooks');
  expect(servicePort?.targetPort).toBe('http');
  const serviceUrl = `http://hookgate-gateway:${servicePort?.port}`;
  const testArgs = testContainer.args ?? [];
  expect(testArgs).toContain(serviceUrl);
  const prepared = prepare(manifests, testSpec, testContainer, 'hookgate-test');
  prepared.argv[prepared.argv.indexOf(serviceUrl)] = `http://127.0.0.1:${gatewayPorts.http}`;
  const helmTest = startContainer(prepared, app);
  running.push(helmTest);
  const tested = await helmTest.exited();
  expect(tested.code, helmTest.output()).toBe(0);
  expect(helmTest.output()).toMatch(/delivery: HTTP 200/);
  // A test event (hookgate.test): settled `ignored` by every handler, no business write.
  expect(helmTest.output()).toMatch(/event \S+: ignored/);
  expect(testArgs).toEqual(expect.arrayContaining(['--endpoint', scenario.testEndpoint]));

  // --- Termination as the kubelet does it: preStop hook, then SIGTERM, within the grace period.
  const stopping = [
    { pod: gatewayPod, container: gateway, process: gatewayProcess },
    { pod: workerPod, container: worker, process: workerProcess },
  ].map(async ({ pod, container, process }) => {
    const started = Date.now();
    const grace = pod.terminationGracePeriodSeconds ?? 30;
    const preStop = container.lifecycle?.preStop?.exec?.command;
    if (preStop) {
      const [command, ...args] = preStop;
      const { spawnSync } = await import('node:child_process');
      expect(spawnSync(command as string, args).status).toBe(0);
    }
    process.child.kill('SIGTERM');
    const exit = await process.exited();
    return { name: container.name, code: exit.code, seconds: (exit.at - started) / 1000, grace };
  });
  const stops = await Promise.all(stopping);
  for (const stop of stops) {
    expect(
      stop.code,
      `${stop.name}:\n${stop.name === 'gateway' ? gatewayProcess.output() : workerProcess.output()}`,
    ).toBe(0);
    expect(stop.seconds).toBeLessThan(stop.grace);
  }
  // The image has no shell and no sleep binary: the pre-stop wait is Node.js's.
  expect(gateway.lifecycle?.preStop?.exec?.command[0]).toBe('node');

  // Nothing was written into the image's /app (its root filesystem is read-only in the pods):
  // no embedded database, no cache, no file of any kind.
  expect(filesUnder(app)).toEqual(appFiles);

  // No process printed the signing secret.
  for (const process of [migrate, gatewayProcess, workerProcess, helmTest]) {
    for (const secret of [SIGNING_SECRET, ROTATED_OUT_SECRET, GITHUB_SECRET]) {
      expect(process.output()).not.toContain(secret);
    }
  }
}

const encode = (text: string) => Buffer.from(text).toString('base64');

/** The existing-secret scenario's user Secret, with the keys given (the database URL always). */
function userSecret(db: TestDatabase, keys: Record<string, string>): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'hookgate-secrets' },
    data: {
      'database-url': encode(db.url),
      ...Object.fromEntries(Object.entries(keys).map(([key, value]) => [key, encode(value)])),
    },
  } as Manifest;
}

describe('the chart, rendered and run as local processes', () => {
  it('default (chart-made Secret): migrates (hook first), serves, processes a signed event, passes helm test, stops on SIGTERM', async () => {
    const db = await createTestDatabase({ migrated: false });
    databases.push(db);
    await renderAndRun(
      {
        // The default scenario, with the test database and a known secret in place of its CI values.
        valuesFiles: (database) => [
          scenarioFile('default-values.yaml'),
          valuesFile({
            secrets: { databaseUrl: database.url, values: { STRIPE_WEBHOOK_SECRET: SIGNING_SECRET } },
          }),
        ],
        signWith: SIGNING_SECRET,
        testEndpoint: 'stripe',
      },
      db,
    );
  }, 600_000);

  it('existingSecret (custom database URL key, two endpoints, a rotated secret): the same, end to end', async () => {
    const db = await createTestDatabase({ migrated: false });
    databases.push(db);
    await renderAndRun(
      {
        valuesFiles: () => [scenarioFile('existing-secret-values.yaml')],
        userSecret: userSecret(db, {
          STRIPE_WEBHOOK_SECRET: SIGNING_SECRET,
          STRIPE_WEBHOOK_SECRET_PREVIOUS: ROTATED_OUT_SECRET,
          GITHUB_WEBHOOK_SECRET: GITHUB_SECRET,
        }),
        // Signed with the second (previous) secret: rotation works through the Secret's keys.
        signWith: ROTATED_OUT_SECRET,
        testEndpoint: 'github',
      },
      db,
    );
  }, 600_000);

  it("a configuration the schema lets through but hookgate refuses fails the migration Job with hookgate's message, before anything is migrated", async () => {
    const db = await createTestDatabase({ migrated: false });
    databases.push(db);
    // Both sizes are in bounds on their own (the schema passes them); together the body
    // budget cannot hold one body. And the user's Secret lacks a key the config names.
    const manifests = await render({
      valuesFiles: [
        scenarioFile('existing-secret-values.yaml'),
        valuesFile({ config: { server: { bodyLimit: '2mib', maxBufferedBytes: '1mib' } } }),
      ],
    });
    manifests.push(
      userSecret(db, {
        STRIPE_WEBHOOK_SECRET: SIGNING_SECRET,
        STRIPE_WEBHOOK_SECRET_PREVIOUS: ROTATED_OUT_SECRET,
      }),
    );
    const job = find(manifests, 'Job', 'hookgate-migrate');
    const pod = podSpec(job);
    const container = only(pod.containers);
    const migrate = startContainer(prepare(manifests, pod, container, 'hookgate-migrate-x'), imageRoot());
    running.push(migrate);
    const exit = await migrate.exited();
    const output = migrate.output();
    expect(exit.code, output).toBe(2);
    expect(output).toContain('hookgate: config_invalid:');
    expect(output).toContain('server.maxBufferedBytes: 1 MiB is smaller than server.bodyLimit (2 MiB)');
    expect(output).toContain(
      'endpoints.github.secrets[0]: environment variable GITHUB_WEBHOOK_SECRET is not set',
    );
    // Exit 2 fails the Job at once (no retries of a configuration that cannot change)...
    const rules = (job.spec as { podFailurePolicy: { rules: unknown[] } }).podFailurePolicy.rules;
    expect(rules).toContainEqual({
      action: 'FailJob',
      onExitCodes: { containerName: 'migrate', operator: 'In', values: [exit.code] },
    });
    // ...Helm prints its output on failure, and nothing was migrated, so no pod would start.
    expect(annotations(job)['helm.sh/hook-output-log-policy']).toBe('hook-failed');
    const tables = await db.pool.query(`SELECT to_regclass('hookgate.inbox') AS inbox`);
    expect(tables.rows[0].inbox).toBeNull();
    expect(output).not.toContain(SIGNING_SECRET);
  }, 600_000);
});
