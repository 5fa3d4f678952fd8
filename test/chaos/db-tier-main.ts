#!/usr/bin/env node
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// `make chaos`, the database tier's long runs (the short ones are test/e2e/pgbouncer,
// failover and network-faults): PgBouncer, failovers with synchronous and asynchronous
// replication (a healthy link, and one stalled before the crash), partitions of 30 and 120 s,
// and a slow, lossy link. Each prints one JSON line of figures (lost, doubled, time to accept
// again, 503s answered during the fault); exits 1 if any promise failed.
// DBTIER_ONLY=<scenario name, comma-separated> runs some of them; DBTIER_SECONDS changes the
// length of the load.
import { z } from 'zod';
import { startEmbeddedPostgres } from '../../services/core/db/embedded.ts';
import { missingCapability } from '../support/netns.ts';
import { runFailover } from './failover.ts';
import { runLossyLink, runPartition } from './network-faults.ts';
import { runThroughPgBouncer } from './pgbouncer-run.ts';

const env = z
  .object({
    DBTIER_ONLY: z.string().optional(),
    DBTIER_SECONDS: z.coerce.number().int().min(20).max(3_600).default(60),
  })
  .parse(process.env);
const seconds = env.DBTIER_SECONDS;
const log = (line: string): void => {
  process.stdout.write(`  ${line}\n`);
};

type Check = readonly [boolean, string];
interface Scenario {
  readonly name: string;
  run(): Promise<{ figures: object; checks: readonly Check[] }>;
}

const failover = (synchronous: boolean, stallBeforeCrashMs: number): Scenario => ({
  name: `failover-${synchronous ? 'sync' : 'async'}${stallBeforeCrashMs ? '-stalled-link' : ''}`,
  async run() {
    const report = await runFailover({
      synchronous,
      stallBeforeCrashMs,
      detectMs: 2_000,
      rate: 60,
      seconds,
      crashAt: 0.4,
      gateways: 2,
      workers: 2,
      drainTimeoutMs: 180_000,
      log,
    });
    const accepting: Check = [
      report.acceptAgainMs !== null && report.acceptAgainMs < 15_000,
      `accepting again ${report.acceptAgainMs} ms after the promotion (at most 15 000)`,
    ];
    return {
      figures: report,
      checks: synchronous
        ? [
            accepting,
            [report.lost === 0, `${report.lost} acknowledged deliveries lost`],
            [report.doubled === 0, `${report.doubled} doubled`],
            [report.pending === 0, `${report.pending} pending`],
          ]
        : // Asynchronous replication is run to show what it loses; only a stalled link must lose.
          [
            accepting,
            [stallBeforeCrashMs === 0 || report.lost > 0, 'the stalled link lost nothing (premise)'],
          ],
    };
  },
});

const scenarios: Scenario[] = [
  {
    name: 'pgbouncer-session',
    async run() {
      const embeddedDir = mkdtempSync(join(tmpdir(), 'hookgate-dbtier-pg-'));
      chmodSync(embeddedDir, 0o755);
      const server = await startEmbeddedPostgres(embeddedDir);
      try {
        const report = await runThroughPgBouncer({
          databaseUrl: server.url,
          mode: 'session',
          rate: 150,
          seconds,
          gateways: 2,
          workers: 2,
          drainTimeoutMs: 180_000,
          log,
        });
        return {
          figures: report,
          checks: [
            [
              report.statuses['200'] === report.requests,
              `answers other than 200: ${JSON.stringify(report.statuses)}`,
            ],
            [report.lost === 0, `${report.lost} lost`],
            [report.doubled === 0, `${report.doubled} doubled`],
            [report.pending === 0, `${report.pending} pending`],
          ],
        };
      } finally {
        await server.stop();
        rmSync(embeddedDir, { recursive: true, force: true });
      }
    },
  },
  failover(true, 0),
  failover(true, 3_000),
  failover(false, 0),
  failover(false, 3_000),
  ...[30_000, 120_000].map(
    (outageMs): Scenario => ({
      name: `partition-${outageMs / 1000}s`,
      async run() {
        const report = await runPartition({
          outageMs,
          rate: 40,
          seconds: Math.max(seconds, Math.ceil((outageMs / 1000) * 2)),
          faultAt: 0.25,
          gateways: 2,
          workers: 2,
          drainTimeoutMs: 300_000,
          log,
        });
        return {
          figures: report,
          checks: [
            [
              report.inFlightAtPartition.claims > 0 && report.inFlightAtPartition.applies > 0,
              'claims and applies in flight at the partition (premise)',
            ],
            [report.fault.answered503 > 0, 'no 503 during the partition'],
            [report.fault.acceptedDuring === 0, `${report.fault.acceptedDuring} 2xx during the partition`],
            [report.fault.unanswered === 0, `${report.fault.unanswered} requests never answered`],
            [
              report.fault.slowestMs < 11_000,
              `a delivery waited ${report.fault.slowestMs} ms for its answer (bound: server.requestTimeout, 10 s)`,
            ],
            [report.acceptAgainMs !== null, 'never accepting again'],
            [report.lost === 0, `${report.lost} lost`],
            [report.doubled === 0, `${report.doubled} doubled`],
            [report.pending === 0, `${report.pending} pending`],
          ],
        };
      },
    }),
  ),
  {
    name: 'lossy-link',
    async run() {
      const report = await runLossyLink({
        loss: 0.05,
        delayMs: 20,
        rate: 60,
        seconds,
        gateways: 2,
        workers: 2,
        drainTimeoutMs: 300_000,
        log,
      });
      return {
        figures: report,
        checks: [
          [report.acknowledged > 0, 'nothing acknowledged'],
          [report.lost === 0, `${report.lost} lost`],
          [report.doubled === 0, `${report.doubled} doubled`],
          [report.pending === 0, `${report.pending} pending`],
        ],
      };
    },
  },
];

const only = env.DBTIER_ONLY?.split(',').map((name) => name.trim());
const netns = missingCapability();
let failed = 0;
for (const scenario of scenarios) {
  if (only && !only.includes(scenario.name)) continue;
  if (netns && (scenario.name.startsWith('partition') || scenario.name === 'lossy-link')) {
    process.stdout.write(`${JSON.stringify({ scenario: scenario.name, skipped: netns })}\n`);
    failed += 1;
    continue;
  }
  process.stdout.write(`${scenario.name}:\n`);
  try {
    const { figures, checks } = await scenario.run();
    process.stdout.write(`${JSON.stringify(figures)}\n`);
    for (const [ok, failure] of checks) {
      if (!ok) {
        failed += 1;
        process.stdout.write(`FAILED ${scenario.name}: ${failure}\n`);
      }
    }
  } catch (error) {
    failed += 1;
    process.stdout.write(`FAILED ${scenario.name}: ${(error as Error).stack ?? String(error)}\n`);
  }
}
process.stdout.write(failed === 0 ? 'database tier: OK\n' : `database tier: ${failed} failure(s)\n`);
process.exitCode = failed === 0 ? 0 : 1;
