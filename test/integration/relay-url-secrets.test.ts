import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import { createForwardHandler } from '../../services/core/handlers/forward.ts';
import type { InboxEvent } from '../../services/core/handlers/types.ts';
import { startRelays } from '../../services/worker/relay.ts';
import { applyEvent, silentLogger, startBoss } from '../support/apply.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { type FakeDownstream, startFakeDownstream } from '../support/fake-downstream.ts';
import { runHookgate } from '../support/process.ts';
import { writeConfigFile } from '../support/worker-harness.ts';

// A downstream that authenticates by a token in its URL gets the token through `${NAME}` in the
// forward URL, so that it lives in a Kubernetes Secret rather than the ConfigMap. The URL used to
// be interpolated when the config loaded: the token was then stored in every outbox job and in
// hookgate.outbox_deliveries.url, and printed by `hookgate events show`. The URL now travels as
// written and the relay resolves it from its own environment when it sends.
const TOKEN = 'tok-3f9c1e7d5b2a4c68';
const ENDPOINT = 'fwd';
const SW = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

let db: TestDatabase;
let boss: PgBoss;
let downstream: FakeDownstream;
let relay: { stop(): Promise<void> };
let withoutToken: { stop(): Promise<void> } | undefined;

const document = (url: string) => ({
  endpoints: {
    [ENDPOINT]: { provider: 'standard-webhooks', secrets: [SW], handler: 'forward', options: { url } },
  },
});

beforeAll(async () => {
  db = await createTestDatabase();
  boss = await startBoss(db.url);
  downstream = await startFakeDownstream();
  relay = await startRelays({
    boss,
    pool: db.pool,
    logger: silentLogger,
    env: { FWD_TOKEN: TOKEN },
    pollingIntervalSeconds: 0.5,
    stopTimeoutMs: 500,
  });
});

afterAll(async () => {
  await withoutToken?.stop();
  await relay?.stop();
  await downstream?.close();
  await boss?.stop({ graceful: false, close: true });
  await db?.drop();
});

function event(eventId: string): InboxEvent {
  return {
    endpoint: ENDPOINT,
    eventId,
    provider: 'standard-webhooks',
    eventType: 'thing.updated',
    entityType: null,
    entityId: null,
    entityVersion: null,
    payload: { id: eventId },
    headers: {},
    receivedAt: new Date(),
    attempts: 1,
    traceparent: null,
  };
}

async function settled(key: string) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const { rows } = await db.pool.query(
      `SELECT status, attempts, url, last_error FROM hookgate.outbox_deliveries WHERE kind = 'forward' AND key = $1`,
      [key],
    );
    if (rows[0] && ['delivered', 'dead'].includes(rows[0].status)) return rows[0];
    if (Date.now() > deadline) throw new Error(`the delivery of ${key} did not settle`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Loads the config as serve does (env given) and applies the event with the configured handler. */
async function forwardThroughConfig(eventId: string, url: string, env: Record<string, string>) {
  const config = parseConfig(document(url), env);
  const options = config.endpoints[ENDPOINT]!.options;
  const saved = process.env.FWD_TOKEN;
  process.env.FWD_TOKEN = env.FWD_TOKEN;
  try {
    const handler = createForwardHandler(options, {
      endpoint: ENDPOINT,
      logger: silentLogger,
      configDir: '.',
    });
    await applyEvent(db.pool, boss, handler, event(eventId));
  } finally {
    if (saved === undefined) delete process.env.FWD_TOKEN;
    else process.env.FWD_TOKEN = saved;
  }
  return options;
}

describe('a secret in a forward URL', () => {
  const template = () => `${downstream.url}/hooks/\${FWD_TOKEN}`;

  it('reaches the downstream, and is stored nowhere: not in the job, the delivery record or events show', async () => {
    const options = await forwardThroughConfig('evt-1', template(), { FWD_TOKEN: TOKEN });
    // The loaded config keeps the URL as written.
    expect(options.url).toBe(template());
    const row = await settled(`${ENDPOINT}:evt-1`);
    expect(row).toMatchObject({ status: 'delivered', attempts: 1, url: template() });
    // The token sits in the path, as in Slack-style webhook URLs: the request carried it.
    const [request] = await downstream.waitFor(`/hooks/${TOKEN}`, 1);
    expect(request!.headers['idempotency-key']).toBe(`${ENDPOINT}:evt-1`);

    const jobs = await db.pool.query(`SELECT count(*)::int AS n FROM pgboss.job WHERE data::text LIKE $1`, [
      `%${TOKEN}%`,
    ]);
    expect(jobs.rows[0].n).toBe(0);
    const anywhere = await db.pool.query(
      `SELECT count(*)::int AS n FROM hookgate.outbox_deliveries WHERE url LIKE $1 OR last_error LIKE $1`,
      [`%${TOKEN}%`],
    );
    expect(anywhere.rows[0].n).toBe(0);

    // The event went through the real claim and apply: its inbox row is there for events show.
    const shown = await runHookgate(
      ['events', 'show', 'evt-1', '--endpoint', ENDPOINT, '--config', writeConfigFile(document(template()))],
      { env: { DATABASE_URL: db.url, LOG_LEVEL: 'warn', FWD_TOKEN: TOKEN } },
    );
    expect(shown.code, shown.output).toBe(0);
    expect(shown.output).toContain('/hooks/${FWD_TOKEN}');
    expect(shown.output).not.toContain(TOKEN);
  });

  it('a relay whose environment lacks the variable: dead at once, saying which, sending nothing', async () => {
    await relay.stop();
    withoutToken = await startRelays({
      boss,
      pool: db.pool,
      logger: silentLogger,
      env: {},
      pollingIntervalSeconds: 0.5,
      stopTimeoutMs: 500,
    });
    const before = downstream.requests.length;
    await forwardThroughConfig('evt-2', template(), { FWD_TOKEN: TOKEN });
    const row = await settled(`${ENDPOINT}:evt-2`);
    expect(row).toMatchObject({ status: 'dead', attempts: 1 });
    expect(row.last_error).toBe('the request could not be built: environment variable FWD_TOKEN is not set');
    expect(downstream.requests.length).toBe(before);
  });

  it('an unset variable is still a config error naming the key; a forward handler built without it refuses to start', () => {
    expect(() => parseConfig(document(template()), {})).toThrow(
      `endpoints.${ENDPOINT}.options.url: environment variable FWD_TOKEN is not set`,
    );
    const saved = process.env.FWD_TOKEN;
    delete process.env.FWD_TOKEN;
    try {
      expect(() =>
        createForwardHandler(
          { url: template() },
          { endpoint: ENDPOINT, logger: silentLogger, configDir: '.' },
        ),
      ).toThrow(`${ENDPOINT}.options.url: environment variable FWD_TOKEN is not set`);
    } finally {
      if (saved !== undefined) process.env.FWD_TOKEN = saved;
    }
  });

  it('billing keeps its notifyUrl as written too; other strings are interpolated as before', () => {
    const config = parseConfig(
      {
        endpoints: {
          pay: {
            provider: 'stripe',
            secrets: ['${PAY_SECRET}'],
            handler: 'billing',
            options: { notifyUrl: 'https://notify.example/hook/${NOTIFY_TOKEN}' },
          },
        },
      },
      { PAY_SECRET: 'whsec_real', NOTIFY_TOKEN: 'n-123' },
    );
    expect(config.endpoints.pay!.options.notifyUrl).toBe('https://notify.example/hook/${NOTIFY_TOKEN}');
    expect(config.endpoints.pay!.secrets).toEqual(['whsec_real']);
  });
});
