// The short chaos run of `make test` (the full one is `make chaos`, test/chaos/main.ts): at least
// 20 s of signed load with duplicates through two gateways and two workers, a process SIGKILLed
// and restarted every 2–4.5 s, PostgreSQL stopped for 3 s mid-run, then a bounded drain and
// `hookgate verify`. It runs on its own embedded PostgreSQL, which it restarts. 20 s holds about
// six kills on a quiet machine; the run goes on (up to two minutes) until each role has been
// killed twice, and the outage lasts until a request sent during it has been answered, so a busy
// machine lengthens the run instead of failing its premise. Its seed is printed
// (CHAOS_SEED=<seed> repeats the kill schedule).
import { describe, expect, it } from 'vitest';
import { runChaos, summary } from '../chaos/chaos.ts';

describe('chaos (short)', { timeout: 480_000 }, () => {
  it('kills and a database restart under load: every acknowledged delivery applied once', async () => {
    const report = await runChaos({
      loadSeconds: 20,
      maxLoadSeconds: 120,
      minKills: { gateway: 2, worker: 2 },
      rate: 60,
      killEveryMs: [2_000, 4_500],
      outageAt: 0.4,
      outageMs: 3_000,
      outageAnswers: 1,
      drainTimeoutMs: 60_000,
      ...(process.env.CHAOS_SEED ? { seed: Number(process.env.CHAOS_SEED) } : {}),
      log: (line) => console.log(line),
    });
    console.log(summary(report));
    const { verify, ...figures } = report;
    console.log(
      JSON.stringify({ ...figures, verify: { ok: verify.ok, violationCount: verify.violationCount } }),
    );
    // The premises: processes of both roles were killed, the database went away and answers
    // were given during the outage, and a meaningful number of deliveries was acknowledged.
    expect(report.kills.gateway + report.kills.worker).toBeGreaterThanOrEqual(4);
    expect(report.kills.gateway).toBeGreaterThanOrEqual(2);
    expect(report.kills.worker).toBeGreaterThanOrEqual(2);
    // Timers and the wall clock may disagree by a millisecond: "about the 3 s asked for".
    expect(report.outage.ms).toBeGreaterThanOrEqual(2_900);
    expect(report.outage.statuses['503'] ?? 0).toBeGreaterThan(0);
    expect(report.deliveries).toBeGreaterThan(400);
    // The promises: never a 2xx while the database was down (only 503s), nothing lost or
    // doubled, nothing pending.
    expect(Object.keys(report.outage.statuses)).toEqual(['503']);
    expect(report.verify.violations).toEqual([]);
    expect(report.lost).toBe(0);
    expect(report.doubled).toBe(0);
    expect(report.pending).toBe(0);
    expect(report.verify.deliveries).toBe(report.deliveries);
  });
});
