import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drive } from '../../load/driver/driver.ts';
import { mixSettings } from '../../load/lib/mix.ts';
import { ROOT } from '../support/process.ts';
import type { SystemCluster } from '../support/system-postgres.ts';
import {
  CHART,
  helm,
  kubectl,
  kubectlOk,
  loadImage,
  restrictedNamespace,
  run,
  until,
} from './support/cluster.ts';
import { IMAGE } from './support/podman.ts';
import {
  allReady,
  createDatabase,
  imageValues,
  install,
  secret,
  startClusterDatabase,
  valuesFile,
  webhookSecret,
} from './support/release.ts';

// The keda-values.yaml scenario with KEDA itself: its operator and metrics API server built from
// the Go module proxy (make cluster-up; test/k8s/tools/build-keda.sh), installed from the
// project's manifest (test/k8s/cluster/keda.yaml) with certificates made here. Signed load through
// the gateway builds a backlog of pending events; KEDA's PostgreSQL trigger (the chart's query)
// scales the workers up from minReplicaCount, and back down once they have drained it.
//
// The backlog must not depend on how fast this machine is: each event's apply sleeps 50 ms (a sql:
// handler), so a worker applies at most about 40 events/s (2 loops) however idle the machine,
// while the gateway takes in far more. The test cluster's HPA controller syncs every 5 s and waits
// 30 s before scaling down; KEDA polls every 2 s.

const NAMESPACE = 'hookgate-keda';
const KEDA_VERSION = process.env.KEDA_VERSION ?? 'v2.21.1';
const KEDA_DIR = process.env.KEDA_DIR ?? join(ROOT, `.tools/keda-${KEDA_VERSION}`);
const MIN = 1;
const MAX = 3;
const signing = webhookSecret();
let database: SystemCluster;
let keda = '';

async function installKeda(): Promise<void> {
  await kubectlOk(['apply', '--server-side', '-k', join(KEDA_DIR, 'crd')]);
  await kubectlOk(['wait', '--for=condition=Established', 'crd', '--all', '--timeout=120s']);
  const certs = mkdtempSync(join(tmpdir(), 'keda-certs-'));
  try {
    const made = await run(join(ROOT, 'test/k8s/cluster/keda-certs.sh'), [certs]);
    expect(made.code, made.stderr).toBe(0);
    keda = readFileSync(join(ROOT, 'test/k8s/cluster/keda.yaml'), 'utf8')
      .replaceAll('@KEDA_IMAGE@', `localhost/hookgate-test/keda:${KEDA_VERSION}`)
      .replaceAll('@KEDA_ADAPTER_IMAGE@', `localhost/hookgate-test/keda-adapter:${KEDA_VERSION}`)
      .replaceAll('@KEDA_CA_BUNDLE@', readFileSync(join(certs, 'ca.crt')).toString('base64'));
    await kubectlOk(['apply', '-f', '-'], keda);
    await kubectlOk([
      'create',
      'secret',
      'generic',
      'kedaorg-certs',
      '--namespace',
      'keda',
      ...['ca.crt', 'tls.crt', 'tls.key'].map((file) => `--from-file=${file}=${join(certs, file)}`),
    ]);
  } finally {
    rmSync(certs, { recursive: true, force: true });
  }
  for (const name of ['keda-operator', 'keda-metrics-apiserver']) {
    await kubectlOk(['rollout', 'status', `deployment/${name}`, '--namespace', 'keda', '--timeout=300s']);
  }
  await until('the external metrics API available', 300, async () => {
    const answer = await kubectl(['get', '--raw', '/apis/external.metrics.k8s.io/v1beta1']);
    return answer.code === 0 && answer.stdout.includes('APIResourceList');
  });
}

beforeAll(async () => {
  database = await startClusterDatabase();
  await restrictedNamespace(NAMESPACE);
  await loadImage(IMAGE);
  await installKeda();
});

afterAll(async () => {
  // The release first: KEDA's finalizer on the ScaledObject needs its operator to go. Then the
  // APIService before its server, so no later kubectl meets an unavailable API group.
  await helm(['uninstall', 'hookgate', '--namespace', NAMESPACE, '--wait']);
  if (keda) await kubectl(['delete', '--ignore-not-found', '--wait', '--timeout=120s', '-f', '-'], keda);
  await database?.stop();
});

interface Deployment {
  spec: { replicas?: number };
  status: { replicas?: number; readyReplicas?: number };
}

const workers = async () =>
  JSON.parse(
    await kubectlOk(['get', 'deployment', 'hookgate-worker', '--namespace', NAMESPACE, '-o', 'json']),
  ) as Deployment;

describe('keda-values.yaml: the workers scaled by KEDA on the inbox backlog', () => {
  it('scales the workers up from minReplicaCount as the backlog grows, and back once it is drained', async () => {
    const url = await createDatabase(database, 'keda');
    await secret(NAMESPACE, 'hookgate-secrets', { DATABASE_URL: url, STRIPE_WEBHOOK_SECRET: signing });
    const installed = await install('hookgate', NAMESPACE, [
      join(CHART, 'ci/keda-values.yaml'),
      valuesFile({
        ...imageValues(),
        worker: {
          keda: {
            minReplicaCount: MIN,
            maxReplicaCount: MAX,
            pollingInterval: 2,
            cooldownPeriod: 10,
            targetPendingPerReplica: 100,
          },
        },
        config: {
          endpoints: {
            // Helm merges this into keda-values.yaml's endpoint (provider and secret kept).
            stripe: { handler: 'sql:SELECT pg_sleep(0.05) WHERE $1::jsonb IS NOT NULL' },
          },
          worker: { batchSize: 10 },
        },
      }),
    ]);
    expect(installed.code, installed.output).toBe(0);
    await allReady(NAMESPACE, 'hookgate');

    // KEDA took the ScaledObject: its HPA on the external metric, within the chart's bounds.
    const hpa = await until('the HPA KEDA makes for the ScaledObject', 120, async () => {
      const answer = await kubectl([
        'get',
        'hpa',
        'keda-hpa-hookgate-worker',
        '--namespace',
        NAMESPACE,
        '-o',
        'json',
      ]);
      return answer.code === 0
        ? (JSON.parse(answer.stdout) as {
            spec: { minReplicas: number; maxReplicas: number; metrics: { type: string }[] };
          })
        : null;
    });
    expect(hpa.spec).toMatchObject({ minReplicas: MIN, maxReplicas: MAX });
    expect(hpa.spec.metrics.map((metric) => metric.type)).toEqual(['External']);
    const scaledObject = JSON.parse(
      await kubectlOk(['get', 'scaledobject', 'hookgate-worker', '--namespace', NAMESPACE, '-o', 'json']),
    ) as { spec: { triggers: { metadata: { query: string } }[] } };
    const query = scaledObject.spec.triggers[0]?.metadata.query ?? '';
    expect(query).toMatch(/status = 'pending'/);
    // The metric as the HPA controller reads it: through the APIService, the adapter, the operator
    // and its PostgreSQL query.
    await until('the backlog metric served by the external metrics API', 120, async () => {
      const answer = await kubectl([
        'get',
        '--raw',
        `/apis/external.metrics.k8s.io/v1beta1/namespaces/${NAMESPACE}/s0-postgresql?labelSelector=scaledobject.keda.sh%2Fname%3Dhookgate-worker`,
      ]);
      return answer.code === 0 && answer.stdout.includes('"value":"0"');
    });
    expect((await workers()).spec.replicas).toBe(MIN);

    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const pending = async () => Number((await client.query<{ count: string }>(query)).rows[0]?.count);
    try {
      const service = JSON.parse(
        await kubectlOk(['get', 'service', 'hookgate-gateway', '--namespace', NAMESPACE, '-o', 'json']),
      ) as { spec: { clusterIP: string; ports: { port: number }[] } };

      // Load until more workers than minReplicaCount are Ready (bounded by the driver's own
      // 180 s): the backlog grows as long as the gateway takes in more than the workers apply.
      const started = Date.now();
      const stop = new AbortController();
      let upSeconds: number | null = null;
      let most = MIN;
      let backlogAtScaleUp = 0;
      const load = drive({
        baseUrl: `http://${service.spec.clusterIP}:${service.spec.ports[0]?.port}`,
        targets: [{ endpoint: 'stripe', provider: 'stripe', secret: signing }],
        rate: 150,
        seconds: 180,
        stop: stop.signal,
        connections: 32,
        maxInFlight: 2000,
        requestTimeoutMs: 15_000,
        mix: mixSettings({ laterDuplicates: 0, concurrentDuplicates: 0 }),
        run: { id: `k${process.pid}`, startedAt: Math.floor(Date.now() / 1000) },
      });
      const readyUp = await until('more workers than minReplicaCount Ready', 300, async () => {
        const state = await workers();
        const replicas = state.spec.replicas ?? 0;
        most = Math.max(most, replicas);
        if (replicas > MIN && upSeconds === null) {
          upSeconds = (Date.now() - started) / 1000;
          backlogAtScaleUp = await pending();
        }
        return (state.status.readyReplicas ?? 0) > MIN ? (state.status.readyReplicas ?? 0) : null;
      }).finally(() => stop.abort());
      const readySeconds = (Date.now() - started) / 1000;
      const sent = await load;
      expect(sent.acked).toBeGreaterThan(0);

      // The backlog drains; KEDA never goes past maxReplicaCount.
      const stopped = Date.now();
      const backlogAtStop = await pending();
      await until('the backlog drained', 600, async () => {
        most = Math.max(most, (await workers()).spec.replicas ?? 0);
        return (await pending()) === 0;
      });
      const drainSeconds = (Date.now() - stopped) / 1000;
      expect(most).toBeLessThanOrEqual(MAX);

      const drained = Date.now();
      await until('the workers back at minReplicaCount', 600, async () => {
        const state = await workers();
        most = Math.max(most, state.spec.replicas ?? 0);
        return state.spec.replicas === MIN && state.status.replicas === MIN ? state : null;
      });
      const downSeconds = (Date.now() - drained) / 1000;
      expect(most).toBeLessThanOrEqual(MAX);

      // Every acknowledged event was applied, by whichever worker took it. (A request that timed
      // out may have been taken in too: those are the only events beyond the acknowledged.)
      const settled = await client.query<{ status: string; count: string }>(
        `SELECT status, count(*) FROM hookgate.inbox GROUP BY status`,
      );
      const statuses = Object.fromEntries(settled.rows.map((row) => [row.status, Number(row.count)]));
      expect(Object.keys(statuses)).toEqual(['processed']);
      expect(statuses.processed).toBeGreaterThanOrEqual(sent.acked);
      expect(statuses.processed).toBeLessThanOrEqual(sent.acked + sent.errors);
      console.log(
        JSON.stringify({
          keda: {
            version: KEDA_VERSION,
            acked: sent.acked,
            errors: sent.errors,
            achievedRate: sent.achievedRate,
            mostReplicas: most,
            readyReplicasAtStop: readyUp,
            backlogAtScaleUp,
            backlogAtStop,
            upAfterSeconds: upSeconds,
            readyAfterSeconds: readySeconds,
            drainedAfterSeconds: drainSeconds,
            downAfterSeconds: downSeconds,
          },
        }),
      );
    } finally {
      await client.end();
    }
  });
});
