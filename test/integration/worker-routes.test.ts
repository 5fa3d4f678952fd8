import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../services/core/db/pool.ts';
import { routesFrom } from '../../services/core/destinations/routes.ts';
import { createHandler } from '../../services/core/handlers/index.ts';
import type { Handler } from '../../services/core/handlers/types.ts';
import { createLogger } from '../../services/core/logging.ts';
import { applyQueue, eventIdsOf } from '../../services/core/queue/names.ts';
import { applyJobs, type FetchedJob } from '../../services/worker/apply.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { Claimer, workerConfig } from '../support/worker-harness.ts';

// A handler's route() through the real batch apply: the deliveries it asks for are written in the
// apply transaction, only for the events that applied, once, whether the set-based pass ran to its
// end or was rolled back to its savepoint and redone event by event; a name that is not one of the
// endpoint's destinations routed by the handler fails that event alone.
const config = workerConfig({
  // Nothing listens there: no relay runs here, the rows are what is compared.
  bill: {
    handler: 'billing',
    options: { notify: 'paid' },
    destinations: { paid: { url: 'http://127.0.0.1:9/paid', routedBy: 'handler' } },
  },
  mod: {
    // The handler is given to applyJobs below; the spec only says a module routes where it likes.
    handler: 'module:./not-loaded.ts',
    destinations: {
      first: { url: 'http://127.0.0.1:9/first', routedBy: 'handler' },
      second: { url: 'http://127.0.0.1:9/second', routedBy: 'handler' },
      everything: { url: 'http://127.0.0.1:9/everything' },
    },
  },
});
const logger = createLogger('silent');
/** One attempt per event: a failed one ends (dead), so no test's leftovers reach the next one's batch. */
const POLICY = { maxAttempts: 1, retryDelaySeconds: 0, retryDelayMaxSeconds: 0 };

let db: TestDatabase;
let claimer: Claimer;
let pool: pg.Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  claimer = await Claimer.start(db.url, config);
  pool = createPool({
    connectionString: db.url,
    max: 1,
    statementTimeoutMs: 30_000,
    connectTimeoutMs: 10_000,
    applicationName: 'test-routes',
  });
});

afterAll(async () => {
  await pool?.end();
  await claimer?.stop();
  await db?.drop();
});

/** Every job waiting in the endpoint's queue, as one worker fetch. */
async function fetchAll(endpoint: string): Promise<FetchedJob[]> {
  return (await claimer.boss.fetch(applyQueue(endpoint), { batchSize: 100 })).map((job) => ({
    id: job.id,
    retryCount: job.retryCount,
    eventIds: eventIdsOf(job.data),
  }));
}

/** Applies everything waiting for the endpoint as one worker batch; each event's outcome. */
async function applyAll(endpoint: string, handler: Handler): Promise<Record<string, string>> {
  const jobs = await fetchAll(endpoint);
  const deps = { pool, boss: claimer.boss, logger, destinations: routesFrom(config) };
  const results = await applyJobs(deps, endpoint, handler, jobs, POLICY);
  return Object.fromEntries(results.map((e) => [e.eventId, e.outcome]));
}

/** `destination:event` of every delivery row of the endpoint. */
async function routed(endpoint: string): Promise<string[]> {
  const { rows } = await db.pool.query<{ key: string }>(
    `SELECT destination || ':' || event_id AS key FROM hookgate.destination_deliveries
      WHERE endpoint = $1 ORDER BY 1`,
    [endpoint],
  );
  return rows.map((row) => row.key);
}

async function inbox(eventId: string) {
  const { rows } = await db.pool.query<{ status: string; last_error: string | null }>(
    'SELECT status, last_error FROM hookgate.inbox WHERE event_id = $1',
    [eventId],
  );
  return rows[0];
}

const paid = (eventId: string, invoice: string) => ({
  eventId,
  eventType: 'invoice.paid',
  body: {
    id: eventId,
    type: 'invoice.paid',
    data: { object: { id: invoice, status: 'paid', currency: 'eur', amount_paid: 4200 } },
  },
});

const plain = (...ids: string[]) =>
  ids.map((eventId) => ({ eventId, eventType: 't', body: { id: eventId } }));

describe('routes in a batch', () => {
  it('billing routes one delivery per new ledger entry, none for a failed event, even when the batch is redone', async () => {
    await claimer.claim('bill', [
      paid('evt_a', 'in_a'),
      paid('evt_b', 'in_b'),
      // The same payment under a second event id: absorbed, not routed.
      paid('evt_a_again', 'in_a'),
      // Not an invoice: the billing handler refuses it, which forces the event-by-event rerun.
      {
        eventId: 'evt_bad',
        eventType: 'invoice.paid',
        body: { id: 'evt_bad', type: 'invoice.paid', data: {} },
      },
    ]);
    const handler = await createHandler('billing', config.endpoints.bill!.options, {
      endpoint: 'bill',
      logger,
      configDir: '.',
    });
    expect(await applyAll('bill', handler)).toEqual({
      evt_a: 'processed',
      evt_b: 'processed',
      evt_a_again: 'ignored',
      evt_bad: 'dead',
    });
    expect(await routed('bill')).toEqual(['paid:evt_a', 'paid:evt_b']);
    const ledger = await db.pool.query('SELECT event_id FROM billing.ledger_entries ORDER BY 1');
    expect(ledger.rows.map((row) => row.event_id)).toEqual(['evt_a', 'evt_b']);
  });

  it('a name that is not a destination routed by the handler fails its own event only, dead at once, saying why', async () => {
    await claimer.claim('mod', plain('m_good', 'm_unknown', 'm_filtered', 'm_url', 'm_other_event'));
    const handler: Handler = {
      name: 'test-routes',
      async apply(context, event) {
        const to: Record<string, string> = {
          m_unknown: 'nosuch',
          m_filtered: 'everything',
          // What a payload might carry: neither a URL nor an environment reference is a name.
          m_url: 'http://127.0.0.1:9/${DATABASE_URL}',
        };
        if (event.eventId === 'm_other_event') context.route({ ...event, eventId: 'm_good' }, 'first');
        else context.route(event, to[event.eventId] ?? 'first');
        return undefined;
      },
    };
    const outcomes = await applyAll('mod', handler);
    expect(outcomes).toEqual({
      m_good: 'processed',
      m_unknown: 'dead',
      m_filtered: 'dead',
      m_url: 'dead',
      m_other_event: 'dead',
    });
    expect(await inbox('m_unknown')).toEqual({
      status: 'dead',
      last_error:
        'route_destination_unknown: the handler routed the event to destination "nosuch", which endpoint mod does not have; a handler routes only to the endpoint\'s destinations with routedBy: handler, and they are first, second',
    });
    expect((await inbox('m_filtered'))?.last_error).toBe(
      'route_destination_unknown: the handler routed the event to destination "everything" of endpoint mod, which receives events through its filter (routedBy: filter), not from a handler; the destinations a handler routes to say routedBy: handler, and they are first, second',
    );
    expect((await inbox('m_url'))?.last_error).toMatch(
      /^route_destination_unknown: the handler routed the event to destination "http:\/\/127\.0\.0\.1:9\/\$\{DATABASE_URL\}", which endpoint mod does not have/,
    );
    // A per-event handler routes the event it was given, not another.
    expect((await inbox('m_other_event'))?.last_error).toMatch(
      /^route_event_unknown: the handler routed event "m_good", which is not being applied here/,
    );
    // Only the good event was routed; the filter destination got what its filter matches.
    expect(await routed('mod')).toEqual(['everything:m_good', 'first:m_good']);
  });

  it('a per-event handler that routes and then throws leaves no delivery: the route goes with its savepoint', async () => {
    await claimer.claim('mod', plain('t_ok', 't_throws'));
    const handler: Handler = {
      name: 'test-routes-throw',
      async apply(context, event) {
        context.route(event, 'second');
        if (event.eventId === 't_throws') throw new Error('after routing');
        return undefined;
      },
    };
    expect(await applyAll('mod', handler)).toEqual({ t_ok: 'processed', t_throws: 'dead' });
    const rows = (await routed('mod')).filter((key) => key.includes(':t_'));
    expect(rows).toEqual(['everything:t_ok', 'second:t_ok']);
  });

  it('a set-based form that routes and then throws keeps only what the per-event rerun routed, once', async () => {
    await db.pool.query('CREATE TABLE public.test_writes (event_id text NOT NULL)');
    await claimer.claim('mod', plain('h1', 'h2', 'h3'));
    let batchCalls = 0;
    const handler: Handler = {
      name: 'test-half-batch',
      // Writes and routes every event, then fails when given more than one: the engine rolls the
      // batch back and applies each event again as a batch of one. The batch pass routes to
      // `first`, the reruns to `second`: a route of the rolled-back pass must not survive.
      async applyBatch(context, events) {
        batchCalls++;
        await context.tx.query('INSERT INTO public.test_writes SELECT unnest($1::text[])', [
          events.map((e) => e.eventId),
        ]);
        for (const event of events) context.route(event, events.length > 1 ? 'first' : 'second');
        if (events.length > 1) throw new Error('the set-based form fails after writing');
        return events.map(() => undefined);
      },
    };
    expect(await applyAll('mod', handler)).toEqual({ h1: 'processed', h2: 'processed', h3: 'processed' });
    expect(batchCalls).toBe(4);
    const writes = await db.pool.query('SELECT event_id FROM public.test_writes ORDER BY 1');
    expect(writes.rows.map((r) => r.event_id)).toEqual(['h1', 'h2', 'h3']);
    const rows = (await routed('mod')).filter((key) => /:h\d$/.test(key));
    expect(rows).toEqual([
      'everything:h1',
      'everything:h2',
      'everything:h3',
      'second:h1',
      'second:h2',
      'second:h3',
    ]);
  });
});
