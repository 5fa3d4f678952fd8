#!/usr/bin/env node
// `make chaos`: the full chaos run (test/chaos/chaos.ts) on its own embedded PostgreSQL.
// Two minutes of signed load, a SIGKILL every 2–6 s (at least 20), PostgreSQL restarted once.
// Prints kills, deliveries, lost, doubled; exits 1 if a promise or a premise failed.
// CHAOS_SEED repeats a run; CHAOS_SECONDS and CHAOS_RATE change its size.
import { z } from 'zod';
import { runChaos, summary } from './chaos.ts';

const env = z
  .object({
    CHAOS_SEED: z.coerce.number().int().nonnegative().optional(),
    CHAOS_SECONDS: z.coerce.number().int().min(30).max(3_600).default(120),
    CHAOS_RATE: z.coerce.number().positive().max(2_000).default(60),
  })
  .parse(process.env);

const report = await runChaos({
  loadSeconds: env.CHAOS_SECONDS,
  rate: env.CHAOS_RATE,
  killEveryMs: [2_000, 6_000],
  outageAt: 0.5,
  outageMs: 5_000,
  drainTimeoutMs: 120_000,
  ...(env.CHAOS_SEED === undefined ? {} : { seed: env.CHAOS_SEED }),
  log: (line) => process.stdout.write(`${line}\n`),
});
process.stdout.write(`${summary(report)}\n`);

const kills = report.kills.gateway + report.kills.worker;
const failures = [
  kills < 20 && `only ${kills} kills (at least 20 expected)`,
  report.kills.gateway === 0 && 'no gateway was killed',
  report.kills.worker === 0 && 'no worker was killed',
  !(report.outage.statuses['503'] ?? 0) && 'no delivery was answered 503 during the database outage',
  Object.keys(report.outage.statuses).some((s) => s !== '503') &&
    `answers other than 503 during the outage: ${JSON.stringify(report.outage.statuses)}`,
  report.deliveries === 0 && 'nothing was acknowledged',
  report.lost > 0 && `${report.lost} acknowledged events lost or unsettled`,
  report.doubled > 0 && `${report.doubled} events applied more than once`,
  report.pending > 0 && `${report.pending} events still pending`,
].filter((f): f is string => typeof f === 'string');
if (report.verify.violations.length > 0) {
  process.stdout.write(`${JSON.stringify(report.verify.violations.slice(0, 20), null, 2)}\n`);
}
for (const failure of failures) process.stdout.write(`FAILED: ${failure}\n`);
process.stdout.write(failures.length === 0 ? 'chaos: OK\n' : '');
process.exitCode = failures.length === 0 ? 0 : 1;
