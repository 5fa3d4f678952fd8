import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  dropQuarantined,
  listQuarantined,
  releaseQuarantined,
} from '../../services/core/quarantine/actions.ts';
import { runCliInProcess } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { SW_SECRET, startTestGateway, type TestGateway, testConfig } from '../support/gateway.ts';
import {
  startTestWorker,
  type TestWorker,
  waitFor,
  workerConfig,
  workerConfigDocument,
  writeConfigFile,
} from '../support/worker-harness.ts';

// DESIGN.md promise 8: a verified delivery that cannot become an inbox event is kept in
// hookgate.quarantine and acknowledged; an unverified one is still refused and kept nowhere.
let db: TestDatabase;
let gateway: TestGateway;
let worker: TestWorker | undefined;

beforeAll(async () => {
  db = await createTestDatabase();
  gateway = await startTestGateway(
    db.url,
    testConfig({ endpoints: { alpha: { provider: 'standard-webhooks', secrets: [SW_SECRET] } } }),
  );
});

afterAll(async () => {
  await worker?.stop();
  await gateway?.stop();
  await db?.drop();
});

// The Standard Webhooks specification's own example body: no `type` anywhere.
const SPEC_EXAMPLE = '{"test": 2432232314}';

const held = async () =>
  (
    await db.pool.query(
      `SELECT endpoint, reason, convert_from(body, 'UTF8') AS body, headers->>'webhook-id' AS webhook_id
         FROM hookgate.quarantine ORDER BY id`,
    )
  ).rows;
const inboxRows = async () =>
  (await db.pool.query('SELECT count(*)::int AS n FROM hookgate.inbox')).rows[0].n as number;

describe('quarantine at the gateway', () => {
  it('keeps an authentic delivery without a type, answers 200 quarantined, stores no inbox row', async () => {
    const delivery = standardWebhook(SW_SECRET, { eventId: 'msg_spec_example', body: SPEC_EXAMPLE });
    const reply = await post(`${gateway.url}/webhooks/alpha`, delivery);
    expect([reply.status, reply.json]).toEqual([
      200,
      { status: 'quarantined', reason: 'event_type_missing' },
    ]);
    expect(await held()).toEqual([
      { endpoint: 'alpha', reason: 'event_type_missing', body: SPEC_EXAMPLE, webhook_id: 'msg_spec_example' },
    ]);
    expect(await inboxRows()).toBe(0);
  });

  it("stores a provider's retry of the same body once, answering it the same", async () => {
    // A retry is signed again (a new timestamp) over the same body.
    const retry = standardWebhook(SW_SECRET, {
      eventId: 'msg_spec_example',
      body: SPEC_EXAMPLE,
      at: new Date(Date.now() + 1000),
    });
    const reply = await post(`${gateway.url}/webhooks/alpha`, retry);
    expect([reply.status, reply.json]).toEqual([
      200,
      { status: 'quarantined', reason: 'event_type_missing' },
    ]);
    expect(await held()).toHaveLength(1);
  });

  it('refuses a forged delivery with 401 and stores nothing', async () => {
    const forged = standardWebhook('whsec_QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE=', {
      body: '{"forged": true}',
    });
    const reply = await post(`${gateway.url}/webhooks/alpha`, forged);
    expect([reply.status, reply.json.error]).toEqual([401, 'signature_invalid']);
    expect(await held()).toHaveLength(1);
    expect(await inboxRows()).toBe(0);
  });

  it('counts quarantined deliveries under outcome="quarantined"', async () => {
    const metric = await gateway.registry.getSingleMetric('hookgate_deliveries_total')?.get();
    const quarantined = metric?.values.find(
      (value) => value.labels.outcome === 'quarantined' && value.labels.endpoint === 'alpha',
    );
    expect(quarantined?.value).toBe(2);
  });
});

describe('quarantine actions', () => {
  // The worker runs the config as it was (no pointer for the type); the fix is the operator's.
  const asItWas = workerConfig({ alpha: {} });
  const fixed = workerConfig({ alpha: { extract: { eventType: '/test' } } });
  const heldId = async () => (await listQuarantined(db.pool, { endpoint: 'alpha' }))[0]!.id;

  it('a release with the config unchanged leaves the delivery held and says why', async () => {
    worker = await startTestWorker(db.url, asItWas);
    const id = await heldId();
    const outcomes = await releaseQuarantined(worker.pool, asItWas, {
      ids: [id],
      actor: 'ops-test',
    });
    expect(outcomes).toMatchObject([{ id, outcome: 'still_unusable', reason: 'event_type_missing' }]);
    expect(await listQuarantined(db.pool, { endpoint: 'alpha' })).toHaveLength(1);
    expect(await inboxRows()).toBe(0);
  });

  it('after an eventType pointer is added, release claims it: one inbox event, applied once', async () => {
    const id = await heldId();
    const outcomes = await releaseQuarantined(worker!.pool, fixed, {
      ids: [id],
      actor: 'ops-test',
    });
    expect(outcomes).toEqual([{ id, outcome: 'accepted', eventId: 'msg_spec_example' }]);
    await waitFor('the released event applied', async () => {
      const { rows } = await db.pool.query(
        `SELECT status FROM hookgate.inbox WHERE endpoint = 'alpha' AND event_id = 'msg_spec_example'`,
      );
      return rows[0]?.status === 'processed';
    });
    // Released again (an operator's double click): nothing more is claimed.
    expect(await releaseQuarantined(worker!.pool, fixed, { ids: [id], actor: 'ops-test' })).toEqual([
      {
        id,
        outcome: 'not_held',
        reason: 'quarantine_settled',
        message: expect.stringMatching(
          /^Quarantined delivery \d+ was released by ops-test at .*: nothing was released\.$/,
        ),
      },
    ]);
    const { rows } = await db.pool.query(
      `SELECT event_type, attempts FROM hookgate.inbox WHERE endpoint = 'alpha'`,
    );
    expect(rows).toEqual([{ event_type: '2432232314', attempts: 1 }]);
    expect(await listQuarantined(db.pool, { endpoint: 'alpha' })).toEqual([]);
    const [released] = await listQuarantined(db.pool, { endpoint: 'alpha', all: true });
    expect([released?.released_at instanceof Date, released?.settled_by]).toEqual([true, 'ops-test']);
  });

  it('drop settles a held delivery for good, with who and why, audited', async () => {
    const other = standardWebhook(SW_SECRET, { body: '{"no_type_here": true}' });
    expect((await post(`${gateway.url}/webhooks/alpha`, other)).json.status).toBe('quarantined');
    const id = await heldId();
    expect(
      (await dropQuarantined(db.pool, { ids: [id], actor: 'ops-test', reason: 'test traffic' })).dropped,
    ).toEqual([id]);
    expect(await dropQuarantined(db.pool, { ids: [id], actor: 'ops-test', reason: 'again' })).toMatchObject({
      dropped: [],
      notDropped: [{ id, code: 'quarantine_settled' }],
    });
    expect(await listQuarantined(db.pool, { endpoint: 'alpha' })).toEqual([]);
    const audit = await db.pool.query(
      `SELECT command, count::int AS count, reason FROM hookgate.audit WHERE actor = 'ops-test' ORDER BY id`,
    );
    expect(audit.rows).toEqual([
      { command: 'quarantine release', count: 0, reason: null },
      { command: 'quarantine release', count: 1, reason: null },
      { command: 'quarantine release', count: 0, reason: null },
      { command: 'quarantine drop', count: 1, reason: 'test traffic' },
      { command: 'quarantine drop', count: 0, reason: 'again' },
    ]);
  });
});

describe('hookgate quarantine (the CLI)', () => {
  it('lists, shows, refuses a drop without a reason, and releases with the fixed config', async () => {
    const env = { DATABASE_URL: db.url, HOOKGATE_CONFIG: undefined, HOOKGATE_ACTOR: 'cli-test' };
    const delivery = standardWebhook(SW_SECRET, { eventId: 'msg_cli', body: '{"kind":"thing.made"}' });
    expect((await post(`${gateway.url}/webhooks/alpha`, delivery)).json.status).toBe('quarantined');
    const listed = await runCliInProcess(['quarantine', 'list', '--endpoint', 'alpha', '--json'], env);
    expect(listed.code).toBe(0);
    const [row] = JSON.parse(listed.stdout) as { id: string; reason: string }[];
    expect(row?.reason).toBe('event_type_missing');
    const shown = await runCliInProcess(['quarantine', 'show', row!.id], env);
    expect([shown.code, shown.stdout.includes('{"kind":"thing.made"}')]).toEqual([0, true]);
    const unexplained = await runCliInProcess(['quarantine', 'drop', row!.id], env);
    expect(unexplained.code).not.toBe(0);
    const config = writeConfigFile(workerConfigDocument({ alpha: { extract: { eventType: '/kind' } } }));
    const released = await runCliInProcess(['quarantine', 'release', row!.id, '--config', config], env);
    expect([released.code, released.stdout]).toEqual([
      0,
      `${row!.id}: released as event msg_cli (accepted)\n`,
    ]);
    const { rows } = await db.pool.query(`SELECT event_type FROM hookgate.inbox WHERE event_id = 'msg_cli'`);
    expect(rows).toEqual([{ event_type: 'thing.made' }]);
  });
});

describe('hookgate quarantine list order', () => {
  // 100 rows: a fresh database's ids cross from two digits to three within them, where text order differs.
  it('lists rows received at the same moment by their numeric id, newest first (99 after 100, not before)', async () => {
    const ids = (
      await db.pool.query<{ id: string }>(
        `INSERT INTO hookgate.quarantine (endpoint, received_at, reason, message, body, headers, body_digest)
         SELECT 'order_test', '2026-01-01T00:00:00Z', 'event_type_missing', 'no type', convert_to(n::text, 'UTF8'), '{}',
                sha256(convert_to('order_test' || n, 'UTF8'))
           FROM generate_series(1, 100) AS n
         RETURNING id::text AS id`,
      )
    ).rows.map((row) => row.id);
    const listed = (await listQuarantined(db.pool, { endpoint: 'order_test' })).map((row) => row.id);
    expect(listed).toEqual([...ids].sort((a, b) => Number(b) - Number(a)));
  });
});
