// Dedupe outlives payloads (docs/storage.md, "Dedupe horizon"), on PostgreSQL 18 and 15: three
// Stripe events processed, two of them aged 40 days (backdated, never slept for), `hookgate
// prune --older-than 30d`, then `hookgate replay --since 45d`. Before the horizon existed, prune
// took the two events' keys with their rows and the replay stored and applied them a second time
// ("2 new"). Now the keys outlive the payloads by dedupe.horizon: within it the replay finds them
// present; a window reaching past it is refused (exit 2) unless forced, and the force is audited.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import { runCliInProcess } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import {
  type FakeApi,
  type StripeEventObject,
  startFakeStripeEvents,
} from '../support/fake-provider-apis.ts';
import { STRIPE_SECRET } from '../support/gateway.ts';
import {
  Claimer,
  FAST_WORKER,
  startTestWorker,
  type TestWorker,
  waitFor,
  writeConfigFile,
} from '../support/worker-harness.ts';

const DAY_S = 86_400;
let db: TestDatabase;
let stripe: FakeApi;
let worker: TestWorker;
let claimer: Claimer;
/** The same configuration, with dedupe.horizon at its default (35d) and at 60d. */
let defaultHorizon: string;
let longHorizon: string;

const handler = `sql:INSERT INTO public.dispatches (event_id) VALUES ($1::jsonb->>'event_id')`;
const now = Math.floor(Date.now() / 1000);
const events: StripeEventObject[] = [
  {
    id: 'evt_old_1',
    object: 'event',
    type: 'invoice.created',
    created: now - 40 * DAY_S,
    data: { object: {} },
  },
  {
    id: 'evt_old_2',
    object: 'event',
    type: 'invoice.created',
    created: now - 40 * DAY_S + 60,
    data: { object: {} },
  },
  { id: 'evt_recent', object: 'event', type: 'invoice.created', created: now - DAY_S, data: { object: {} } },
];

beforeAll(async () => {
  db = await createTestDatabase();
  await db.pool.query(`CREATE TABLE public.dispatches (seq bigserial PRIMARY KEY, event_id text NOT NULL)`);
  stripe = await startFakeStripeEvents(events);
  const document = {
    claim: { maxWait: '2ms' },
    worker: FAST_WORKER,
    endpoints: {
      pay: { provider: 'stripe', secrets: [STRIPE_SECRET], handler, replay: { apiBase: stripe.url } },
    },
  };
  defaultHorizon = writeConfigFile(document);
  longHorizon = writeConfigFile({ ...document, dedupe: { horizon: '60d' } });
  const config = parseConfig(document, {});
  worker = await startTestWorker(db.url, config);
  claimer = await Claimer.start(db.url, config);
  // The three events, delivered and applied once each.
  await claimer.claim(
    'pay',
    events.map((event) => ({ eventId: event.id, eventType: event.type, body: event })),
  );
  await waitFor('the three events applied', async () => (await applied()).size === 3, 60_000);
  // Two of them 40 days old: the row moves to the partition of that time, and its key follows.
  await db.pool.query(
    `UPDATE hookgate.inbox SET received_at = now() - interval '40 days'
      WHERE endpoint = 'pay' AND event_id IN ('evt_old_1', 'evt_old_2')`,
  );
}, 120_000);

afterAll(async () => {
  await claimer?.stop();
  await worker?.stop();
  await stripe?.close();
  await db?.drop();
});

/** How many times each event was applied. */
async function applied(): Promise<Map<string, number>> {
  const { rows } = await db.pool.query<{ event_id: string; n: number }>(
    'SELECT event_id, count(*)::int AS n FROM public.dispatches GROUP BY event_id',
  );
  return new Map(rows.map((row) => [row.event_id, row.n]));
}

async function keys(): Promise<string[]> {
  const { rows } = await db.pool.query<{ event_id: string }>(
    `SELECT event_id FROM hookgate.inbox_keys WHERE endpoint = 'pay' ORDER BY event_id`,
  );
  return rows.map((row) => row.event_id);
}

async function payloads(): Promise<string[]> {
  const { rows } = await db.pool.query<{ event_id: string }>(
    `SELECT event_id FROM hookgate.inbox WHERE endpoint = 'pay' AND event_id LIKE 'evt%' ORDER BY event_id`,
  );
  return rows.map((row) => row.event_id);
}

const cli = (args: readonly string[]) =>
  runCliInProcess(args, {
    DATABASE_URL: db.url,
    STRIPE_API_KEY: 'rk_test_horizon',
    HOOKGATE_CONFIG: undefined,
    LOG_LEVEL: 'warn',
  });
const jsonOf = (output: string) => JSON.parse(output.slice(output.indexOf('{')));

/** A sentinel through the same claim and worker: once it is applied, anything queued before it was too. */
async function drained(tag: string): Promise<void> {
  await claimer.claim('pay', [{ eventId: `sentinel_${tag}`, body: { id: `sentinel_${tag}` } }]);
  await waitFor(`sentinel ${tag} applied`, async () => (await applied()).has(`sentinel_${tag}`), 60_000);
}

describe('the dedupe horizon', () => {
  it('prune takes the payloads older than 30 days but keeps their keys: a replay within the horizon finds them present, applied once', async () => {
    const pruned = await cli(['prune', '--older-than', '30d', '--json', '--config', longHorizon]);
    expect(pruned.code, pruned.output).toBe(0);
    expect(jsonOf(pruned.stdout)).toMatchObject({ inbox_rows: 2, inbox_keys: 0, dedupe_horizon: '60d' });
    expect(await payloads()).toEqual(['evt_recent']);
    expect(await keys()).toEqual(['evt_old_1', 'evt_old_2', 'evt_recent']);

    // A provider's redelivery of a pruned event within the horizon: a duplicate.
    await claimer.claim('pay', [{ eventId: 'evt_old_1', body: events[0] }]);
    expect(await payloads()).toEqual(['evt_recent']);

    const replay = await cli([
      'replay',
      '--endpoint',
      'pay',
      '--since',
      '45d',
      '--json',
      '--config',
      longHorizon,
    ]);
    expect(replay.code, replay.output).toBe(0);
    expect(jsonOf(replay.stdout)).toMatchObject({ fetched: 3, new: 0, already_present: 3 });
    await drained('within');
    expect(await applied()).toEqual(
      new Map([
        ['evt_old_1', 1],
        ['evt_old_2', 1],
        ['evt_recent', 1],
        ['sentinel_within', 1],
      ]),
    );
  }, 120_000);

  it('a window reaching past the horizon is refused with a sentence, dry run or not, and nothing is fetched', async () => {
    stripe.requests.length = 0;
    for (const extra of [[], ['--dry-run']]) {
      const refused = await cli([
        'replay',
        '--endpoint',
        'pay',
        '--since',
        '45d',
        ...extra,
        '--config',
        defaultHorizon,
      ]);
      expect(refused.code, refused.output).toBe(2);
      expect(refused.output).toMatch(
        /dedupe_horizon_exceeded: The replay window starts at .*, before .*: deduplication keys older than that are pruned \(dedupe\.horizon is 35d\).*--force/,
      );
    }
    expect(stripe.requests).toEqual([]);
    expect(await payloads()).toEqual(['evt_recent']);
  });

  it('prune with the default horizon forgets the keys past 35 days; a forced replay then says so in the audit trail', async () => {
    const pruned = await cli(['prune', '--older-than', '30d', '--json', '--config', defaultHorizon]);
    expect(pruned.code, pruned.output).toBe(0);
    expect(jsonOf(pruned.stdout)).toMatchObject({ inbox_rows: 0, inbox_keys: 2, dedupe_horizon: '35d' });
    expect(await keys()).not.toContain('evt_old_1');
    // A horizon raised after the keys went cannot bring them back: the window is still refused.
    const raised = await cli([
      'replay',
      '--endpoint',
      'pay',
      '--since',
      '45d',
      '--dry-run',
      '--config',
      longHorizon,
    ]);
    expect(raised.code, raised.output).toBe(2);
    expect(raised.output).toMatch(
      /dedupe_horizon_exceeded: .*deduplication keys older than that were pruned/,
    );
    // Forced (a dry run here): the two events would be stored again, and the audit row says it was forced.
    const forced = await cli([
      'replay',
      '--endpoint',
      'pay',
      '--since',
      '45d',
      '--dry-run',
      '--force',
      '--json',
      '--config',
      defaultHorizon,
    ]);
    expect(forced.code, forced.output).toBe(0);
    expect(jsonOf(forced.stdout)).toMatchObject({ fetched: 3, new: 2, already_present: 1 });
    const { rows } = await db.pool.query(
      `SELECT filters->>'forced_past_dedupe_horizon' AS forced, dry_run FROM hookgate.audit
        WHERE command = 'replay' ORDER BY id DESC LIMIT 1`,
    );
    expect(rows).toEqual([{ forced: 'true', dry_run: true }]);
  });
});
