import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyQueue } from '../../services/core/queue/names.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { installEffects } from '../support/worker-effects.ts';
import {
  Claimer,
  startTestWorker,
  type TestWorker,
  waitFor,
  workerConfig,
} from '../support/worker-harness.ts';

// How a failing event ends: parked or dead is decided from the code the last attempt reported
// to pg-boss, not from the row's last_error text; failures retrying cannot fix are dead at once;
// transient ones keep their retries.

const config = workerConfig({
  kids: { handler: 'project', options: { createOn: ['thing.created'] } },
  unkeyed: { handler: 'project' },
  billing: { handler: 'billing' },
  flaky: { handler: 'project' },
});

/**
 * Test-only fault, in this test database: once a row of `commit_fail` has been attempted twice,
 * any transaction that writes it other than to end it dead fails at COMMIT (a deferred
 * constraint trigger). So its apply batches fail as a whole, and so does the separate statement
 * that would record that batch failure on the row; ending it dead still works.
 */
const INSTALL_COMMIT_FAULT = `
  CREATE TABLE public.commit_fail (event_id text PRIMARY KEY);
  CREATE FUNCTION public.commit_fail() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF NEW.status <> 'dead' AND NEW.attempts >= 2
       AND EXISTS (SELECT 1 FROM public.commit_fail WHERE event_id = NEW.event_id) THEN
      RAISE EXCEPTION 'injected commit failure for %', NEW.event_id;
    END IF;
    RETURN NEW;
  END $$;
  CREATE CONSTRAINT TRIGGER commit_fail AFTER UPDATE ON hookgate.inbox
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.commit_fail();`;

let db: TestDatabase;
let claimer: Claimer;
let worker: TestWorker;

beforeAll(async () => {
  db = await createTestDatabase();
  await installEffects(db.pool);
  await db.pool.query(INSTALL_COMMIT_FAULT);
  claimer = await Claimer.start(db.url, config);
  worker = await startTestWorker(db.url, config);
});

afterAll(async () => {
  await worker?.stop();
  await claimer?.stop();
  await db?.drop();
});

interface Row {
  status: string;
  attempts: number;
  last_error: string | null;
}

async function row(endpoint: string, eventId: string): Promise<Row | undefined> {
  const { rows } = await db.pool.query(
    'SELECT status, attempts, last_error FROM hookgate.inbox WHERE endpoint = $1 AND event_id = $2',
    [endpoint, eventId],
  );
  return rows[0];
}

const settled = (endpoint: string, eventId: string, timeoutMs = 30_000) =>
  waitFor(
    `${endpoint}/${eventId} settled`,
    async () => {
      const r = await row(endpoint, eventId);
      return r && r.status !== 'pending' ? r : null;
    },
    timeoutMs,
  );

/** The job the row names (the last one that carried it). */
async function jobOf(endpoint: string, eventId: string) {
  const { rows } = await db.pool.query(
    `SELECT j.state::text AS state, j.retry_count AS "retryCount", j.output FROM hookgate.inbox i
       JOIN pgboss.job j ON j.name = $3 AND j.id = i.dispatch_job
      WHERE i.endpoint = $1 AND i.event_id = $2`,
    [endpoint, eventId, applyQueue(endpoint)],
  );
  return rows[0] as { state: string; retryCount: number; output: unknown } | undefined;
}

describe('how failing events end', { timeout: 60_000 }, () => {
  it('a last attempt that failed its batch is dead, although the row still says entity_not_yet_known', async () => {
    await db.pool.query('INSERT INTO public.commit_fail VALUES ($1)', ['orphan_upd']);
    await claimer.claim('kids', [
      { eventId: 'orphan_upd', eventType: 'thing.updated', entityType: 'thing', entityId: 'k9', version: 2 },
    ]);
    const ended = await settled('kids', 'orphan_upd');
    // The premise: the row's own text is stale from attempt 1, and the job's last output is the
    // batch failure (the statement that would have recorded it on the row failed too); the
    // sweeper ended the row from that output.
    const job = await jobOf('kids', 'orphan_upd');
    expect(job).toMatchObject({ state: 'failed', output: { code: 'batch_failed' } });
    expect(ended).toMatchObject({ status: 'dead', attempts: config.worker.retryLimit + 1 });
    expect(ended.last_error).toMatch(/^batch_failed: .*injected commit failure for orphan_upd/);
  });

  it('entity_not_yet_known on every attempt is still parked', async () => {
    await claimer.claim('kids', [
      { eventId: 'early_upd', eventType: 'thing.updated', entityType: 'thing', entityId: 'k8', version: 2 },
    ]);
    const ended = await settled('kids', 'early_upd');
    expect(ended).toMatchObject({ status: 'parked', attempts: config.worker.retryLimit + 1 });
    expect(ended.last_error).toMatch(/^entity_not_yet_known: thing k8 has no state yet/);
  });

  it('a projection with no key is dead at its first attempt, and its job is not retried', async () => {
    await claimer.claim('unkeyed', [{ eventId: 'no_key' }]);
    const ended = await settled('unkeyed', 'no_key', 10_000);
    expect(ended).toMatchObject({ status: 'dead', attempts: 1 });
    expect(ended.last_error).toMatch(/^projection_unkeyed: /);
    const job = await jobOf('unkeyed', 'no_key');
    expect(job).toMatchObject({ state: 'completed', retryCount: 0 });
  });

  it('an invalid billing payload is dead at its first attempt', async () => {
    await claimer.claim('billing', [
      {
        eventId: 'bad_invoice',
        eventType: 'invoice.paid',
        body: { type: 'invoice.paid', data: { object: {} } },
      },
    ]);
    const ended = await settled('billing', 'bad_invoice', 10_000);
    expect(ended).toMatchObject({ status: 'dead', attempts: 1 });
    expect(ended.last_error).toMatch(/^billing_payload_invalid: /);
  });

  it('a transient failure keeps retrying until its limit, then is dead', async () => {
    await db.pool.query('INSERT INTO public.fail_control VALUES ($1)', ['flaky_1']);
    await claimer.claim('flaky', [{ eventId: 'flaky_1', entityType: 'thing', entityId: 'f1', version: 1 }]);
    const ended = await settled('flaky', 'flaky_1');
    expect(ended).toMatchObject({ status: 'dead', attempts: config.worker.retryLimit + 1 });
    expect(ended.last_error).toMatch(/^sqlstate_P0001: injected failure for flaky_1/);
  });
});
