import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drive } from '../../load/driver/driver.ts';
import { mixSettings } from '../../load/lib/mix.ts';
import { runHookgate } from '../support/process.ts';
import type { SystemCluster } from '../support/system-postgres.ts';
import { CHART, helm, kubectlOk, loadImage, pods, restrictedNamespace, until } from './support/cluster.ts';
import { IMAGE } from './support/podman.ts';
import {
  allReady,
  createDatabase,
  imageValues,
  install,
  startClusterDatabase,
  valuesFile,
  webhookSecret,
} from './support/release.ts';

// The default scenario under 200 signed deliveries a second through the gateway Service (the
// project's load driver, duplicates and all): a rolling `helm upgrade` to a new image tag, a
// `helm rollback` to the first revision, then a gateway pod and a worker pod deleted. After the
// load, once the workers have drained, `hookgate verify`: every acknowledged delivery in the
// inbox once and settled, nothing pending. The only non-2xx answer allowed is 503 (the gateway's
// "retry later", docs/gateway.md).

const NAMESPACE = 'hookgate-upgrade';
const RATE = 200;
const secret = webhookSecret();
let database: SystemCluster;
let url: string;
let work: string;

beforeAll(async () => {
  database = await startClusterDatabase();
  url = await createDatabase(database, 'upgrade');
  await restrictedNamespace(NAMESPACE);
  await loadImage(IMAGE);
  await loadImage(IMAGE, 'next');
  work = mkdtempSync(join(tmpdir(), 'hookgate-upgrade-'));
});

afterAll(async () => {
  await helm(['uninstall', 'hookgate', '--namespace', NAMESPACE, '--wait']);
  await database?.stop();
});

/** Offers RATE deliveries a second in chunks of 20 s until `done` says stop; every answer kept. */
async function loadUntil(done: () => boolean, sentFile: string, gateway: string) {
  const statuses: Record<string, number> = {};
  let chunk = 0;
  let acked = 0;
  let dropped = 0;
  let errors = 0;
  while (!done()) {
    chunk += 1;
    const part = `${sentFile}.${chunk}`;
    const result = await drive({
      baseUrl: gateway,
      targets: [{ endpoint: 'stripe', provider: 'stripe', secret }],
      rate: RATE,
      seconds: 20,
      connections: 64,
      maxInFlight: 4000,
      requestTimeoutMs: 15_000,
      mix: mixSettings({ laterDuplicates: 0.1, concurrentDuplicates: 0.05, versionsPerEntity: 4 }),
      run: { id: `u${process.pid}c${chunk}`, startedAt: Math.floor(Date.now() / 1000) },
      recordTo: part,
    });
    for (const [status, count] of Object.entries(result.statuses))
      statuses[status] = (statuses[status] ?? 0) + count;
    acked += result.acked;
    dropped += result.dropped;
    errors += result.errors;
    appendFileSync(sentFile, readFileSync(part));
  }
  return { statuses, acked, dropped, errors, seconds: chunk * 20 };
}

async function verify(sentFile: string, configFile: string) {
  // The backlog drains first: verify is only meaningful once nothing is pending.
  return until('verify clean (the backlog drained)', 600, async () => {
    const result = await runHookgate(['verify', '--sent', sentFile, '--config', configFile, '--json'], {
      env: { DATABASE_URL: url, STRIPE_WEBHOOK_SECRET: secret, LOG_LEVEL: 'warn' },
    });
    const report = JSON.parse(result.output.slice(result.output.indexOf('{'))) as {
      ok: boolean;
      deliveries: number;
      events: number;
      violations: { kind: string }[];
      violationCount: number;
    };
    if (report.violations.some((violation) => violation.kind === 'pending')) return null;
    return report;
  });
}

describe('the default scenario under 200 deliveries/s', () => {
  it('upgrades, rolls back and loses pods with 0 lost, 0 doubled', async () => {
    const values = valuesFile({
      ...imageValues(),
      secrets: { databaseUrl: url, values: { STRIPE_WEBHOOK_SECRET: secret } },
    });
    const installed = await install('hookgate', NAMESPACE, [join(CHART, 'ci/default-values.yaml'), values]);
    expect(installed.code, installed.output).toBe(0);
    await allReady(NAMESPACE, 'hookgate');
    const service = JSON.parse(
      await kubectlOk(['get', 'service', 'hookgate-gateway', '--namespace', NAMESPACE, '-o', 'json']),
    ) as { spec: { clusterIP: string; ports: { port: number }[] } };
    const gateway = `http://${service.spec.clusterIP}:${service.spec.ports[0]?.port}`;
    const configFile = join(work, 'hookgate.yaml');
    writeFileSync(
      configFile,
      'endpoints:\n  stripe:\n    provider: stripe\n    secrets: ["${STRIPE_WEBHOOK_SECRET}"]\n    handler: record\n',
    );

    const sentFile = join(work, 'sent.jsonl');
    let finished = false;
    const load = loadUntil(() => finished, sentFile, gateway);
    const steps: Record<string, number> = {};
    try {
      await new Promise((resolve) => setTimeout(resolve, 10_000));
      const upgraded = await helm([
        'upgrade',
        'hookgate',
        CHART,
        '--namespace',
        NAMESPACE,
        '-f',
        join(CHART, 'ci/default-values.yaml'),
        '-f',
        values,
        '--set',
        'image.tag=next',
        '--wait',
        '--timeout',
        '10m',
      ]);
      expect(upgraded.code, upgraded.stdout + upgraded.stderr).toBe(0);
      steps.upgradeSeconds = upgraded.seconds;
      await until('every pod on the new image', 300, async () => {
        const list = await allReady(NAMESPACE, 'hookgate');
        return list.every((pod) => pod.image.endsWith(':next')) ? list : null;
      });

      const rolledBack = await helm([
        'rollback',
        'hookgate',
        '1',
        '--namespace',
        NAMESPACE,
        '--wait',
        '--timeout',
        '10m',
      ]);
      expect(rolledBack.code, rolledBack.stdout + rolledBack.stderr).toBe(0);
      steps.rollbackSeconds = rolledBack.seconds;
      await until('every pod back on the first image', 300, async () => {
        const list = await allReady(NAMESPACE, 'hookgate');
        return list.every((pod) => !pod.image.endsWith(':next')) ? list : null;
      });

      const running = await pods(NAMESPACE, 'app.kubernetes.io/instance=hookgate');
      const victims = ['gateway', 'worker'].map(
        (component) => running.find((pod) => pod.component === component)?.name,
      );
      const started = Date.now();
      await kubectlOk(['delete', 'pod', '--namespace', NAMESPACE, ...(victims as string[])]);
      await until('replacement pods Ready', 300, async () => {
        const list = await allReady(NAMESPACE, 'hookgate');
        return list.length >= 4 && list.every((pod) => !victims.includes(pod.name)) ? list : null;
      });
      steps.podsReplacedSeconds = (Date.now() - started) / 1000;
      await new Promise((resolve) => setTimeout(resolve, 10_000));
    } finally {
      finished = true;
    }
    const offered = await load;
    const report = await verify(sentFile, configFile);
    console.log(
      JSON.stringify({
        rate: RATE,
        steps,
        load: offered,
        verify: {
          ok: report.ok,
          deliveries: report.deliveries,
          events: report.events,
          violations: report.violationCount,
        },
      }),
    );

    const refused = Object.entries(offered.statuses).filter(
      ([status]) => !/^2\d\d$/.test(status) && status !== '503',
    );
    expect(refused, 'answers other than 2xx and 503').toEqual([]);
    expect(offered.errors + offered.dropped, 'deliveries with no answer or not offered').toBe(0);
    expect(report.violations).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.deliveries).toBe(offered.acked);
  });
});
