// The short failover runs of `make test` (the long ones are in `make chaos`): a PostgreSQL 15
// primary and a streaming standby of its own, gateway and worker processes through PgBouncer,
// signed load with duplicates, the primary's host killed, the standby promoted and PgBouncer
// pointed at it. Synchronous replication loses nothing acknowledged; asynchronous replication,
// with the standby's link stalled before the crash, loses what was acknowledged meanwhile.
import { describe, expect, it } from 'vitest';
import { runFailover } from '../chaos/failover.ts';

const SHORT = {
  rate: 50,
  seconds: 16,
  crashAt: 0.4,
  detectMs: 1_000,
  gateways: 1,
  workers: 1,
  drainTimeoutMs: 90_000,
};

describe('failover to a promoted standby', { timeout: 240_000 }, () => {
  it('synchronous replication: 0 acknowledged lost, 0 doubled, accepting again within 15 s of the promotion', async () => {
    const report = await runFailover({
      ...SHORT,
      synchronous: true,
      stallBeforeCrashMs: 2_000,
      log: (line) => console.log(line),
    });
    console.log(JSON.stringify(report));
    expect(report.acknowledged).toBeGreaterThan(300);
    expect(report.fault.answered503).toBeGreaterThan(0);
    expect(report.acceptAgainMs).not.toBeNull();
    expect(report.acceptAgainMs!).toBeLessThan(15_000);
    expect(report.lostExamples).toEqual([]);
    expect(report.lost).toBe(0);
    expect(report.doubled).toBe(0);
    expect(report.pending).toBe(0);
  });

  it('asynchronous replication, same fault: deliveries acknowledged while the link stalled are lost', async () => {
    const report = await runFailover({
      ...SHORT,
      synchronous: false,
      stallBeforeCrashMs: 2_000,
      log: (line) => console.log(line),
    });
    console.log(JSON.stringify(report));
    // What synchronous replication prevents: 2xx answers whose WAL never reached the standby.
    expect(report.fault.acceptedDuring).toBeGreaterThan(0);
    expect(report.lost).toBeGreaterThan(0);
    expect(report.acceptAgainMs).not.toBeNull();
    expect(report.acceptAgainMs!).toBeLessThan(15_000);
  });
});
