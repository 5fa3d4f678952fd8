import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../support/cli.ts';
import { effectCounts } from '../support/worker-effects.ts';
import { waitFor } from '../support/worker-harness.ts';
import { useWorkerStack } from '../support/worker-stack.ts';

// The per-attempt history with a worker process: an event that fails three times and then
// succeeds has four attempts, each with its time, worker, outcome, error and duration, and
// `events show` prints them in its timeline.
const endpoints = { flaky: { handler: 'project' } };
// Test-only instrumentation: the business write fails while the event's row has counted fewer
// than three attempts (its attempt number is settled after the write, so attempts 1–3 fail).
const FAIL_FIRST_THREE = `
  CREATE FUNCTION public.fail_first_three() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF (SELECT attempts FROM hookgate.inbox WHERE endpoint = NEW.endpoint AND event_id = NEW.event_id) < 3 THEN
      RAISE EXCEPTION 'not yet: %', NEW.event_id;
    END IF;
    RETURN NEW;
  END $$;
  CREATE TRIGGER fail_first_three BEFORE INSERT OR UPDATE ON hookgate.entity_state
    FOR EACH ROW EXECUTE FUNCTION public.fail_first_three();`;

const stack = useWorkerStack({
  endpoints,
  worker: { retryLimit: 3 },
  effects: true,
  setup: async (db) => {
    await db.pool.query(FAIL_FIRST_THREE);
  },
  workers: 1,
});

describe('per-attempt history', () => {
  it('an event that failed three times and then succeeded has four attempts, shown in its timeline', async () => {
    await stack.claimer.claim('flaky', [
      { eventId: 'evt_flaky', entityType: 'thing', entityId: 't1', version: 1 },
    ]);
    await waitFor(
      'evt_flaky to be processed',
      async () =>
        (await stack.db.pool.query(`SELECT status FROM hookgate.inbox WHERE event_id = 'evt_flaky'`)).rows[0]
          ?.status === 'processed',
      60_000,
    );
    expect((await effectCounts(stack.db.pool, 'flaky')).get('evt_flaky')).toBe(1);
    const shown = await runCliInProcess(
      ['events', 'show', 'evt_flaky', '--endpoint', 'flaky', '--json', '--config', stack.configFile],
      { DATABASE_URL: stack.db.url },
    );
    expect(shown.code, shown.output).toBe(0);
    const event = JSON.parse(shown.stdout) as {
      attempts: number;
      attempt_history: { attempt: number; outcome: string }[];
      timeline: { at: string; what: string }[];
    };
    const history = (
      await stack.db.pool.query<{
        attempt: number;
        worker: string;
        outcome: string;
        error_code: string | null;
        error_message: string | null;
        duration_ms: number;
        at: Date;
      }>(`SELECT attempt, worker, outcome, error_code, error_message, duration_ms, at FROM hookgate.apply_attempts
           WHERE endpoint = 'flaky' AND event_id = 'evt_flaky' ORDER BY at, id`)
    ).rows;
    const who = `${hostname()}:${stack.workers[0]?.child.pid}`;
    expect(
      history.map(({ attempt, worker: by, outcome, error_code }) => ({ attempt, by, outcome, error_code })),
    ).toEqual([
      { attempt: 1, by: who, outcome: 'failed', error_code: 'sqlstate_P0001' },
      { attempt: 2, by: who, outcome: 'failed', error_code: 'sqlstate_P0001' },
      { attempt: 3, by: who, outcome: 'failed', error_code: 'sqlstate_P0001' },
      { attempt: 4, by: who, outcome: 'processed', error_code: null },
    ]);
    for (const row of history.slice(0, 3)) expect(row.error_message).toMatch(/not yet: evt_flaky/);
    for (const row of history) expect(row.duration_ms).toBeGreaterThanOrEqual(0);
    // Later attempts start later (the backoff is between them).
    const times = history.map((row) => row.at.getTime());
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    expect(new Set(times).size).toBe(4);
    // The timeline: received, the four attempts, settled.
    expect(event.attempts).toBe(4);
    expect(event.attempt_history.map((row) => `${row.attempt} ${row.outcome}`)).toEqual([
      '1 failed',
      '2 failed',
      '3 failed',
      '4 processed',
    ]);
    expect(event.timeline.map((entry) => entry.what)).toEqual([
      'received',
      expect.stringMatching(/^attempt 1 by \S+: failed, sqlstate_P0001: not yet: evt_flaky.* \(\d+ ms\)$/),
      expect.stringMatching(/^attempt 2 by \S+: failed, sqlstate_P0001: not yet: evt_flaky/),
      expect.stringMatching(/^attempt 3 by \S+: failed, sqlstate_P0001: not yet: evt_flaky/),
      expect.stringMatching(/^attempt 4 by \S+: processed \(\d+ ms\)$/),
      'settled processed after 4 attempt(s)',
    ]);
  }, 90_000);
});
