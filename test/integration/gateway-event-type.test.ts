import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../services/core/config/schema.ts';
import { githubReplaySource } from '../../services/core/replay/github.ts';
import { replayEvents } from '../../services/core/replay/run.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook, stripeEvent } from '../support/deliveries.ts';
import { type FakeApi, startFakeGithubDeliveries } from '../support/fake-provider-apis.ts';
import {
  STRIPE_SECRET,
  SW_SECRET,
  startTestGateway,
  type TestGateway,
  testConfig,
} from '../support/gateway.ts';
import { Claimer } from '../support/worker-harness.ts';

// An event type is printed by the CLI, sent as a header by the relay and used as a metric label:
// like an id, it may not carry control characters (ESC sequences act on a terminal, newlines
// forge lines). The gateway refuses them as it refuses such ids, and `hookgate replay` counts
// such an event as unusable instead of storing it.
let db: TestDatabase;
let gateway: TestGateway;
let claimer: Claimer;
let config: Config;
let api: FakeApi | undefined;

beforeAll(async () => {
  db = await createTestDatabase();
  config = testConfig({
    endpoints: {
      alpha: { provider: 'standard-webhooks', secrets: [SW_SECRET] },
      stripe: { provider: 'stripe', secrets: [STRIPE_SECRET] },
      gh: { provider: 'github', secrets: ['github-secret-for-type-tests'] },
    },
  });
  gateway = await startTestGateway(db.url, config);
  claimer = await Claimer.start(db.url, config);
});

afterAll(async () => {
  await api?.close();
  await claimer?.stop();
  await gateway?.stop();
  await db?.drop();
});

const rows = async (endpoint: string) =>
  (await db.pool.query('SELECT count(*)::int AS n FROM hookgate.inbox WHERE endpoint = $1', [endpoint]))
    .rows[0].n as number;

const HOSTILE_TYPES = [
  'invoice.paid\u001b[2J',
  'invoice.paid\r\n{"level":50}',
  'invoice\u0000paid',
  'invoice.paid\u009b31m',
  'invoice.paid\u007f',
  'invoice.\ud800',
  '   ',
];

describe('event types with control characters', () => {
  it.each(HOSTILE_TYPES)(
    'standard-webhooks: type %j is 400 event_type_invalid and stores nothing',
    async (type) => {
      const delivery = standardWebhook(SW_SECRET, { body: JSON.stringify({ type, data: { id: 'x' } }) });
      const reply = await post(`${gateway.url}/webhooks/alpha`, delivery);
      expect([reply.status, reply.json.error]).toEqual([400, 'event_type_invalid']);
      expect(reply.json.message).toBe(
        'The event type is blank, or contains control characters or invalid Unicode.',
      );
    },
  );

  it('stripe: the same rule for a type in a signed body', async () => {
    const reply = await post(
      `${gateway.url}/webhooks/stripe`,
      stripeEvent(STRIPE_SECRET, { type: 'a\u001b]0;x' }),
    );
    expect([reply.status, reply.json.error]).toEqual([400, 'event_type_invalid']);
    expect(await rows('stripe')).toBe(0);
  });

  it('nothing was stored, and types in other scripts are still accepted', async () => {
    expect(await rows('alpha')).toBe(0);
    const reply = await post(
      `${gateway.url}/webhooks/alpha`,
      standardWebhook(SW_SECRET, { type: 'заказ.создан · ✓' }),
    );
    expect(reply.json.status).toBe('accepted');
  });

  it('hookgate replay: an event whose type has control characters is unusable, not stored', async () => {
    api = await startFakeGithubDeliveries('acme/shop', 1, [
      {
        id: 1,
        guid: randomUUID(),
        deliveredAt: new Date(),
        event: 'issues',
        action: 'opened\u001b[2J',
        payload: { action: 'opened\u001b[2J', issue: { number: 1 } },
      },
      {
        id: 2,
        guid: randomUUID(),
        deliveredAt: new Date(),
        event: 'issues',
        action: 'opened',
        payload: { action: 'opened', issue: { number: 2 } },
      },
    ]);
    const source = githubReplaySource({
      token: 't',
      apiBase: api.url,
      webhook: { kind: 'repository', repository: 'acme/shop', hookId: 1 },
    });
    const window = { since: new Date(Date.now() - 60_000), until: new Date(Date.now() + 1_000) };
    const report = await replayEvents(
      claimer.pool,
      claimer.boss,
      'gh',
      config.endpoints.gh!,
      source,
      window,
      {
        actor: 'test',
        horizonMs: config.dedupe.horizon,
      },
    );
    expect(report).toMatchObject({ fetched: 2, new: 1, unusable: 1 });
    expect(report.problems).toEqual([
      'The event type is blank, or contains control characters or invalid Unicode.',
    ]);
    expect(await rows('gh')).toBe(1);
  });
});
