// The short network-fault runs of `make test` (the long ones, 30 s and 120 s partitions, are in
// `make chaos`): PostgreSQL in a network namespace of the test's own, hookgate's gateway and
// worker outside it, iptables DROP on the namespace's veth while claims and applies are in
// flight, then latency plus 5 % packet loss under load.
import { describe, expect, it } from 'vitest';
import { runLossyLink, runPartition } from '../chaos/network-faults.ts';
import { missingCapability } from '../support/netns.ts';

const missing = missingCapability();

describe.skipIf(missing !== null)(
  'network faults between hookgate and PostgreSQL',
  { timeout: 300_000 },
  () => {
    it('partition mid-claim and mid-apply: 503 within the bound, nothing half-done, everything drains once', async () => {
      const report = await runPartition({
        outageMs: 15_000,
        rate: 40,
        seconds: 30,
        faultAt: 0.3,
        gateways: 1,
        workers: 1,
        drainTimeoutMs: 120_000,
        log: (line) => console.log(line),
      });
      console.log(JSON.stringify(report));
      expect(report.inFlightAtPartition.claims).toBeGreaterThan(0);
      expect(report.inFlightAtPartition.applies).toBeGreaterThan(0);
      expect(report.fault.answered503).toBeGreaterThan(0);
      expect(report.fault.acceptedDuring).toBe(0);
      expect(report.fault.unanswered).toBe(0);
      // server.requestTimeout (10 s by default), plus a timer's lateness on a busy machine.
      expect(report.fault.slowestMs).toBeLessThan(11_000);
      expect(report.acceptAgainMs).not.toBeNull();
      expect(report.lost).toBe(0);
      expect(report.doubled).toBe(0);
      expect(report.pending).toBe(0);
    });

    it('latency plus 5 % packet loss: no 2xx without a commit, verify clean', async () => {
      const report = await runLossyLink({
        loss: 0.05,
        delayMs: 10,
        rate: 40,
        seconds: 15,
        gateways: 1,
        workers: 1,
        drainTimeoutMs: 120_000,
        log: (line) => console.log(line),
      });
      console.log(JSON.stringify(report));
      expect(report.acknowledged).toBeGreaterThan(300);
      expect(report.lost).toBe(0);
      expect(report.doubled).toBe(0);
      expect(report.pending).toBe(0);
    });
  },
);
