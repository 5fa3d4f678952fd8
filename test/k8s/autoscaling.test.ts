import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drive } from '../../load/driver/driver.ts';
import { mixSettings } from '../../load/lib/mix.ts';
import { ROOT } from '../support/process.ts';
import type { SystemCluster } from '../support/system-postgres.ts';
import { CHART, helm, kubectl, kubectlOk, loadImage, restrictedNamespace, until } from './support/cluster.ts';
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

// The hpa-values.yaml scenario with metrics-server (built from the Go module proxy like the
// cluster, its image imported by make cluster-up): under signed load the gateway's
// HorizontalPodAutoscaler scales it up on CPU, and back down once the load stops (the test
// cluster's controller-manager waits 30 s before scaling down instead of 5 minutes). Replica
// bounds and the CPU target are lowered to what one two-core node can schedule and show.

const NAMESPACE = 'hookgate-hpa';
const METRICS_SERVER_IMAGE =
  process.env.METRICS_SERVER_IMAGE ?? 'localhost/hookgate-test/metrics-server:v0.8.1';
const signing = webhookSecret();
let database: SystemCluster;

beforeAll(async () => {
  database = await startClusterDatabase();
  await restrictedNamespace(NAMESPACE);
  await loadImage(IMAGE);
  const manifest = readFileSync(join(ROOT, 'test/k8s/cluster/metrics-server.yaml'), 'utf8').replaceAll(
    '@METRICS_SERVER_IMAGE@',
    METRICS_SERVER_IMAGE,
  );
  await kubectlOk(['apply', '-f', '-'], manifest);
  await until('the metrics API answering for pods', 300, async () => {
    const answer = await kubectl(['get', '--raw', '/apis/metrics.k8s.io/v1beta1/pods']);
    return answer.code === 0 && answer.stdout.includes('PodMetricsList');
  });
});

afterAll(async () => {
  await helm(['uninstall', 'hookgate', '--namespace', NAMESPACE, '--wait']);
  await database?.stop();
});

interface Hpa {
  status: { currentReplicas?: number; desiredReplicas?: number };
  spec: { minReplicas: number };
}

const hpa = async (name: string) =>
  JSON.parse(await kubectlOk(['get', 'hpa', name, '--namespace', NAMESPACE, '-o', 'json'])) as Hpa;

describe('hpa-values.yaml: the gateway HPA on a real metrics API', () => {
  it('scales the gateway up under load and back down after it', async () => {
    const url = await createDatabase(database, 'hpa');
    await secret(NAMESPACE, 'hookgate-secrets', { DATABASE_URL: url, STRIPE_WEBHOOK_SECRET: signing });
    const installed = await install('hookgate', NAMESPACE, [
      join(CHART, 'ci/hpa-values.yaml'),
      valuesFile({
        ...imageValues(),
        // 200 deliveries/s keep two gateways at about 40 % of their 250m CPU request here: a target
        // of 20 % makes that load a reason to scale, and idle pods (a few %) a reason to come back.
        gateway: { autoscaling: { minReplicas: 2, maxReplicas: 4, targetCPUUtilizationPercentage: 20 } },
        worker: { autoscaling: { minReplicas: 2, maxReplicas: 3 } },
      }),
    ]);
    expect(installed.code, installed.output).toBe(0);
    await allReady(NAMESPACE, 'hookgate');
    const service = JSON.parse(
      await kubectlOk(['get', 'service', 'hookgate-gateway', '--namespace', NAMESPACE, '-o', 'json']),
    ) as { spec: { clusterIP: string; ports: { port: number }[] } };

    const started = Date.now();
    let scaledUp: number | null = null;
    for (let chunk = 1; scaledUp === null && chunk <= 12; chunk += 1) {
      await drive({
        baseUrl: `http://${service.spec.clusterIP}:${service.spec.ports[0]?.port}`,
        targets: [{ endpoint: 'stripe', provider: 'stripe', secret: signing }],
        rate: 200,
        seconds: 15,
        connections: 64,
        maxInFlight: 4000,
        requestTimeoutMs: 15_000,
        mix: mixSettings({ laterDuplicates: 0.1, concurrentDuplicates: 0.05, versionsPerEntity: 4 }),
        run: { id: `h${process.pid}c${chunk}`, startedAt: Math.floor(Date.now() / 1000) },
      });
      const state = await hpa('hookgate-gateway');
      if ((state.status.desiredReplicas ?? 0) > state.spec.minReplicas)
        scaledUp = state.status.desiredReplicas ?? 0;
    }
    const upSeconds = (Date.now() - started) / 1000;
    expect(scaledUp, 'the gateway HPA asked for more replicas under load').not.toBeNull();

    const stopped = Date.now();
    await until('the gateway HPA back at its minimum', 600, async () => {
      const state = await hpa('hookgate-gateway');
      return (
        state.status.desiredReplicas === state.spec.minReplicas &&
        state.status.currentReplicas === state.spec.minReplicas
      );
    });
    console.log(
      JSON.stringify({
        hpa: {
          scaledUpTo: scaledUp,
          upAfterSeconds: upSeconds,
          downAfterSeconds: (Date.now() - stopped) / 1000,
        },
      }),
    );
  });
});
