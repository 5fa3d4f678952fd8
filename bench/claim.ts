// The claim statement alone: hookgate's own CLAIM_IN_ONE_STATEMENT (prepared, as the gateway
// sends it) from several connections at once, no HTTP and no verification, with and without
// its wake-up. It shows what PostgreSQL spends per delivery on the claim, and what the NOTIFY
// riding on each claim costs concurrent claims (they commit one after another: see
// services/core/queue/wakeup-throttle.ts).
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { type Claim, claimDocument } from '../services/core/inbox/claim.ts';
import { CLAIM_IN_ONE_STATEMENT, CLAIM_STATEMENT_NAME } from '../services/core/inbox/claim-sql.ts';
import { createBoss } from '../services/core/queue/boss.ts';
import { ensureQueues } from '../services/core/queue/queues.ts';
import { WAKEUP_CHANNEL } from '../services/core/queue/wakeup.ts';
import { postgresCpu, postmasterPid } from './cpu.ts';
import type { BenchDatabase } from './processes.ts';

const ENDPOINT = 'bench';
/** Deliveries re-sent among the new ones, as in the ingest scenario. */
const DUPLICATE_SHARE = 0.2;

export interface ClaimSettings {
  readonly seconds: number;
  readonly connections: number;
  readonly batches: readonly number[];
}

export interface ClaimRun {
  readonly batch: number;
  readonly wakeup: boolean;
  readonly deliveriesPerSecond: number;
  readonly claimP50Ms: number;
  readonly claimP99Ms: number;
  /** PostgreSQL's CPU seconds per 1 000 deliveries (postmaster and all its children). */
  readonly postgresPer1k: number;
  /** Cores PostgreSQL kept busy. */
  readonly postgresCores: number;
}

export interface ClaimReport {
  readonly scenario: 'claim';
  readonly settings: ClaimSettings;
  readonly runs: readonly ClaimRun[];
}

function body(id: string): string {
  return JSON.stringify({
    type: 'invoice.paid',
    timestamp: new Date().toISOString(),
    data: {
      id,
      object: 'invoice',
      customer: 'cus_bench',
      amount_due: 1200,
      lines: [{ note: 'x'.repeat(200) }],
    },
  });
}

function claimOf(eventId: string): Claim {
  return {
    endpoint: ENDPOINT,
    provider: 'standard-webhooks',
    event: {
      eventId,
      eventType: 'invoice.paid',
      entityType: null,
      entityId: null,
      entityVersion: null,
      headers: { 'webhook-id': eventId },
    },
    body: body(eventId),
    traceparent: null,
  };
}

const percentile = (sorted: readonly number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? Number.NaN;

export async function claimScenario(database: BenchDatabase, settings: ClaimSettings): Promise<ClaimReport> {
  const boss = createBoss({
    connectionString: database.url,
    max: 2,
    supervise: false,
    applicationName: 'bench-claim',
  });
  boss.on('error', () => {});
  await boss.start();
  await ensureQueues(boss, [ENDPOINT]);
  const admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  const postmaster = await postmasterPid(admin);
  // Workers listen in production; a notification with nobody listening costs less.
  const listener = new pg.Client({ connectionString: database.url });
  await listener.connect();
  listener.on('notification', () => {});
  await listener.query(`LISTEN ${WAKEUP_CHANNEL}`);
  const sent: string[] = [];
  const batchOf = (size: number): Claim[] => {
    const claims: Claim[] = [];
    for (let n = 0; n < size; n += 1) {
      const again = sent.length > 100 && Math.random() < DUPLICATE_SHARE;
      const id = again ? sent[Math.floor(Math.random() * sent.length)]! : `evt_${randomUUID()}`;
      if (!again) sent.push(id);
      claims.push(claimOf(id));
    }
    // Sorted, as claimBatch sends them.
    return claims.sort((a, b) => (a.event.eventId < b.event.eventId ? -1 : 1));
  };
  const runs: ClaimRun[] = [];
  try {
    for (const batch of settings.batches) {
      // Alternated, so drift on the machine hits both alike.
      for (const wakeup of [true, false, true, false]) {
        const clients = await Promise.all(
          Array.from({ length: settings.connections }, async () => {
            const client = new pg.Client({ connectionString: database.url, application_name: 'bench-claim' });
            await client.connect();
            return client;
          }),
        );
        const latencies: number[] = [];
        let delivered = 0;
        const cpuBefore = postgresCpu(postmaster);
        const started = performance.now();
        const end = started + (settings.seconds * 1000) / 2;
        await Promise.all(
          clients.map(async (client) => {
            while (performance.now() < end) {
              const claims = batchOf(batch);
              const at = performance.now();
              await client.query({
                name: CLAIM_STATEMENT_NAME,
                text: CLAIM_IN_ONE_STATEMENT,
                values: [claimDocument(claims), claims.length, wakeup],
              });
              latencies.push(performance.now() - at);
              delivered += claims.length;
            }
          }),
        );
        const seconds = (performance.now() - started) / 1000;
        const cpu = postgresCpu(postmaster) - cpuBefore;
        await Promise.all(clients.map((client) => client.end()));
        latencies.sort((a, b) => a - b);
        runs.push({
          batch,
          wakeup,
          deliveriesPerSecond: delivered / seconds,
          claimP50Ms: percentile(latencies, 0.5),
          claimP99Ms: percentile(latencies, 0.99),
          postgresPer1k: (cpu / delivered) * 1000,
          postgresCores: cpu / seconds,
        });
      }
    }
  } finally {
    await listener.end();
    await admin.end();
    await boss.stop({ graceful: false, close: true });
  }
  return { scenario: 'claim', settings, runs };
}

export function renderClaim(report: ClaimReport): string[] {
  const { seconds, connections } = report.settings;
  const fmt = (n: number, digits = 0) => n.toFixed(digits).padStart(9);
  const lines = [
    `claim: hookgate's claim statement alone (prepared, its own commit), ${connections} connections, 20% duplicates, a listener present, ${seconds}s per batch size (halves alternating)`,
    '  batch  wake-up   deliveries/s  claim p50 ms  p99 ms  PG CPU s/1k  PG cores',
  ];
  for (const run of report.runs) {
    lines.push(
      `  ${String(run.batch).padStart(5)}  ${(run.wakeup ? 'NOTIFY' : 'none').padEnd(7)} ${fmt(run.deliveriesPerSecond)}      ${fmt(run.claimP50Ms, 2)} ${fmt(run.claimP99Ms, 2)}   ${fmt(run.postgresPer1k, 3)} ${fmt(run.postgresCores, 2)}`,
    );
  }
  for (const batch of report.settings.batches) {
    const rate = (wakeup: boolean) => {
      const matching = report.runs.filter((run) => run.batch === batch && run.wakeup === wakeup);
      return matching.reduce((sum, run) => sum + run.deliveriesPerSecond, 0) / matching.length;
    };
    lines.push(
      `  batch ${batch}: without the per-claim NOTIFY / with it: ${(rate(false) / rate(true)).toFixed(2)}`,
    );
  }
  return lines;
}
