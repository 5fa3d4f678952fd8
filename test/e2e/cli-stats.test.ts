import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../support/cli.ts';
import { runHookgate } from '../support/process.ts';
import { waitFor } from '../support/worker-harness.ts';
import { useWorkerStack } from '../support/worker-stack.ts';

// `stats --json` after a scripted scenario (duplicates, failures, parked events) equals what
// direct SQL counts say, and its duplicate rate is what the script sent.

const endpoints = { ops: { handler: 'project' }, other: { handler: 'record' } };

const stack = useWorkerStack({ endpoints, worker: { retryLimit: 0 }, effects: true, workers: 1 });

const env = () => ({ DATABASE_URL: stack.db.url, LOG_LEVEL: 'warn' });
const jsonOf = (output: string) => JSON.parse(output.slice(output.indexOf('{')));

describe('hookgate stats', () => {
  it('reports what the database holds: backlog, settled, deliveries, duplicate rate', async () => {
    const events = Array.from({ length: 20 }, (_, i) => ({
      eventId: `evt_${i}`,
      entityType: 'thing',
      entityId: `t${i}`,
      version: 1,
    }));
    // Three fail (dead at their first attempt: retryLimit 0).
    await stack.db.pool.query(
      `INSERT INTO public.fail_control (event_id) VALUES ('evt_0'), ('evt_1'), ('evt_2')`,
    );
    await stack.claimer.claim('ops', events);
    // Duplicates: 5 redelivered once, 2 of them a second time, and one batch carrying a key twice.
    await stack.claimer.claim('ops', events.slice(5, 10));
    await stack.claimer.claim('ops', events.slice(5, 7));
    await stack.claimer.claim('ops', [events[12]!, events[12]!]);
    const sentAccepted = 22;
    const sentDuplicates = 5 + 2 + 2;
    await stack.claimer.claim('other', [{ eventId: 'o1' }]);
    // Two test events (what send-test sends): settled ignored, counted apart.
    await stack.claimer.claim('ops', [
      { eventId: 'test_1', eventType: 'hookgate.test' },
      { eventId: 'test_2', eventType: 'hookgate.test' },
    ]);
    await waitFor('every event settled', async () => {
      const r = await stack.db.pool.query(
        `SELECT count(*)::int AS n FROM hookgate.inbox WHERE status = 'pending'`,
      );
      return r.rows[0].n === 0;
    });
    // Two settled events are parked by hand (the scenario's "missing context" events).
    await stack.db.pool.query(
      `UPDATE hookgate.inbox SET status = 'parked' WHERE event_id IN ('evt_18', 'evt_19')`,
    );
    // One is discarded (as `hookgate discard` leaves one): counted apart, never in the backlog.
    await stack.db.pool.query(
      `UPDATE hookgate.inbox SET status = 'discarded', discarded_at = now(), discarded_by = 'op', discard_reason = 'r' WHERE event_id = 'evt_17'`,
    );
    // Known latencies: the ops rows settled took 1, 2, … n seconds from receipt, so the
    // percentiles are known exactly (percentile_cont interpolates: p50 (n+1)/2, p99 1 + 0.99 (n-1)).
    const settled = await stack.db.pool.query(
      `UPDATE hookgate.inbox i SET processed_at = i.received_at + make_interval(secs => o.k)
         FROM (SELECT event_id, row_number() OVER (ORDER BY event_id)::int AS k
                 FROM hookgate.inbox WHERE endpoint = 'ops' AND processed_at IS NOT NULL) o
        WHERE i.endpoint = 'ops' AND i.event_id = o.event_id`,
    );
    const n = settled.rowCount ?? 0;
    expect(n).toBeGreaterThan(1);

    const run = await runHookgate(['stats', '--json', '--config', stack.configFile, '--since', '10m'], {
      env: env(),
    });
    expect(run.code, run.output).toBe(0);
    const report = jsonOf(run.output);
    const sql = await stack.db.pool.query<{ endpoint: string; status: string; n: number }>(
      `SELECT endpoint, status, count(*)::int AS n FROM hookgate.inbox GROUP BY endpoint, status`,
    );
    const count = (endpoint: string, status: string) =>
      sql.rows.find((r) => r.endpoint === endpoint && r.status === status)?.n ?? 0;
    const ops = report.endpoints.find((e: { endpoint: string }) => e.endpoint === 'ops');
    // The premise: the scenario produced failures and parked events.
    expect(count('ops', 'dead')).toBe(3);
    expect(count('ops', 'parked')).toBe(2);
    expect(count('ops', 'discarded')).toBe(1);
    for (const status of ['pending', 'parked', 'dead', 'processed', 'stale', 'discarded']) {
      expect(ops[status], status).toBe(count('ops', status));
    }
    expect(ops.test).toBe(2);
    expect(ops.ignored).toBe(count('ops', 'ignored') - 2);
    // The columns add up: every accepted event of the window is in exactly one of them.
    expect(
      ops.pending +
        ops.parked +
        ops.dead +
        ops.processed +
        ops.ignored +
        ops.stale +
        ops.discarded +
        ops.test,
    ).toBe(ops.accepted);
    expect(ops.accepted).toBe(sentAccepted);
    expect(ops.duplicate).toBe(sentDuplicates);
    expect(ops.duplicate_rate).toBeCloseTo(sentDuplicates / (sentAccepted + sentDuplicates), 10);
    expect(ops.latency_p50_seconds).toBe((n + 1) / 2);
    expect(ops.latency_p99_seconds).toBe(Math.round((1 + 0.99 * (n - 1)) * 1000) / 1000);
    const other = report.endpoints.find((e: { endpoint: string }) => e.endpoint === 'other');
    expect(other).toMatchObject({ accepted: 1, duplicate: 0, duplicate_rate: 0, processed: 1 });

    // Filtered to one endpoint: the same figures, alone.
    const one = await runHookgate(['stats', '--json', '--endpoint', 'ops', '--config', stack.configFile], {
      env: env(),
    });
    expect(jsonOf(one.output).endpoints).toHaveLength(1);

    // Human output: an aligned table with the rate.
    const human = await runHookgate(['stats', '--config', stack.configFile], { env: env() });
    expect(human.code).toBe(0);
    expect(human.output).toMatch(
      /ENDPOINT\s+PENDING\s+OLDEST\s+PARKED\s+DEAD\s+PROCESSED\s+IGNORED\s+STALE\s+DISCARDED\s+TEST\s+ACCEPTED\s+DUPLICATES\s+DUP-RATE/,
    );
    expect(human.output).toMatch(/ops\s+0\s+-\s+2\s+3\s+14\s+0\s+0\s+1\s+2\s+22\s+9\s+29\.0%/);
  }, 120_000);

  it('events list filters and events show prints the timeline; unknown endpoints are refused', async () => {
    const list = await runHookgate(
      ['events', 'list', '--endpoint', 'ops', '--status', 'dead', '--json', '--config', stack.configFile],
      { env: env() },
    );
    expect(list.code, list.output).toBe(0);
    const rows = JSON.parse(list.output.slice(list.output.indexOf('[')));
    expect(rows.map((r: { event_id: string }) => r.event_id).sort()).toEqual(['evt_0', 'evt_1', 'evt_2']);
    expect(rows[0].last_error).toMatch(/injected failure/);

    const show = await runHookgate(
      ['events', 'show', 'evt_3', '--endpoint', 'ops', '--config', stack.configFile],
      {
        env: env(),
      },
    );
    expect(show.code, show.output).toBe(0);
    expect(show.output).toMatch(/status\s+processed/);
    expect(show.output).toMatch(
      /timeline\n.*received\n.*attempt 1 by \S+: processed \(\d+ ms\)\n.*settled processed after 1 attempt/,
    );
    expect(show.output).toMatch(/"id": "evt_3"/);

    // The refusals' exit codes and lines, on the real program in this process.
    const unknownEvent = await runCliInProcess(
      ['events', 'show', 'nope', '--endpoint', 'ops', '--config', stack.configFile],
      env(),
    );
    expect(unknownEvent.code).toBe(2);
    expect(unknownEvent.output).toMatch(/event_unknown/);

    for (const args of [
      ['events', 'list', '--endpoint', 'nope', '--config', stack.configFile],
      ['stats', '--endpoint', 'nope', '--config', stack.configFile],
      ['stats', '--endpoint', 'nope'],
    ]) {
      const refused = await runCliInProcess(args, env());
      expect(refused.code, args.join(' ')).toBe(2);
      expect(refused.output).toMatch(/endpoint_unknown: No endpoint named "nope"/);
    }
  }, 60_000);
});
