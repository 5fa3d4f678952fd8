import { describe, expect, it } from 'vitest';
import { retryDelaySeconds } from '../../services/core/apply/backoff.ts';
import { parseConfig } from '../../services/core/config/load.ts';
import { heartbeatRefreshMs } from '../../services/core/queue/heartbeat.ts';
import { heartbeatSecondsFrom, retryPolicyFrom } from '../../services/core/queue/queues.ts';
import { LEASE_SECONDS, leaseRenewalMs } from '../../services/core/reconcile/run.ts';
import { RECONCILE_HEARTBEAT_SECONDS } from '../../services/core/reconcile/schedule.ts';

// The shipped timings, proved by their arithmetic rather than by waiting them out: the tests that
// run real processes use the same mechanisms with their clocks moved (docs/architecture.md, "How
// to write a test that needs time").

const shipped = parseConfig(
  {
    endpoints: { e: { provider: 'standard-webhooks', secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'] } },
  },
  {},
).worker;

describe('the shipped worker timings', () => {
  it('a lost worker is noticed by its heartbeat, well before expireIn', () => {
    const heartbeat = heartbeatSecondsFrom(shipped);
    expect(heartbeat).toBe(10);
    expect(heartbeat! * 1000).toBeLessThan(shipped.expireIn);
    expect(retryPolicyFrom(shipped).heartbeatSeconds).toBe(heartbeat);
  });

  it('a live worker refreshes its heartbeat three times per heartbeat: two late refreshes are not fatal', () => {
    const heartbeat = heartbeatSecondsFrom(shipped)! * 1000;
    expect(heartbeatRefreshMs(heartbeat / 1000) * 3).toBe(heartbeat);
    expect(heartbeatRefreshMs(heartbeat / 1000) * 2).toBeLessThan(heartbeat);
  });

  it('a SIGKILLed worker’s batch is taken up within 30 s: heartbeat, then supervision, then a poll', () => {
    // Worst case: killed just after a refresh; the supervisor runs just before the heartbeat
    // lapses and finds it a full interval later; the retried job waits one poll.
    const worst = heartbeatSecondsFrom(shipped)! * 1000 + shipped.superviseInterval + shipped.pollingInterval;
    expect(worst).toBe(15_500);
    expect(worst).toBeLessThanOrEqual(30_000);
  });

  it('retries back off from retryDelay, doubling, to retryDelayMax, half of each wait random', () => {
    const policy = {
      retryDelaySeconds: shipped.retryDelay / 1000,
      retryDelayMaxSeconds: shipped.retryDelayMax / 1000,
    };
    const attempts = Array.from({ length: shipped.retryLimit }, (_, n) => n + 1);
    expect(attempts.map((n) => retryDelaySeconds(n, policy, 1))).toEqual([2, 4, 8, 16, 32, 64, 128]);
    expect(attempts.map((n) => retryDelaySeconds(n, policy, 0))).toEqual([1, 2, 4, 8, 16, 32, 64]);
    expect(retryDelaySeconds(20, policy, 1)).toBe(600);
    // Eight attempts span at most about four minutes of waiting: an event is dead or applied then.
    const longest = attempts.reduce((sum, n) => sum + retryDelaySeconds(n, policy, 1), 0);
    expect(longest).toBe(254);
  });
});

describe('the shipped reconciliation timings', () => {
  it('a run renews its lease every third of it, and a dead run’s job goes before its lease', () => {
    expect(leaseRenewalMs(LEASE_SECONDS) * 3).toBe(LEASE_SECONDS * 1000);
    expect(RECONCILE_HEARTBEAT_SECONDS).toBeLessThan(LEASE_SECONDS);
    // The next run may start once the dead one's lease has run out: at most a lease after the
    // last renewal, so a crash costs at most LEASE_SECONDS plus one slot.
    expect(LEASE_SECONDS).toBe(90);
  });
});
