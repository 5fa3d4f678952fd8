import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type { PgBoss } from 'pg-boss';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningConsole, startConsole } from '../../services/console/server.ts';
import { parseConfig } from '../../services/core/config/load.ts';
import type { Config } from '../../services/core/config/schema.ts';
import { routesFrom } from '../../services/core/destinations/routes.ts';
import { createLogger } from '../../services/core/logging.ts';
import { createBoss } from '../../services/core/queue/boss.ts';
import {
  createDestinationMetrics,
  type RunningDestinationRelay,
  startDestinationRelay,
} from '../../services/worker/destinations.ts';
import { type ByteAnswer, type ByteReceiver, startByteReceiver } from '../support/byte-receiver.ts';
import { runCliInProcess } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import {
  Claimer,
  startTestWorker,
  type TestWorker,
  waitFor,
  workerConfigDocument,
  writeConfigFile,
} from '../support/worker-harness.ts';

// Receivers that answer what real servers answer when they fail (an IIS error page in UTF-16, a
// gzip body, a NUL byte, invalid UTF-8, a UTF-8 header value, 10 MiB) beside a healthy
// destination of the same endpoint, through the real relay loop (whose records are
// group-committed across destinations) and real HTTP on 127.0.0.1. Every failing destination's
// delivery is sent exactly its first attempt and `retry.limit` retries, ends dead with every
// attempt visible and its answer's bytes kept, and feeds its breaker; the healthy destination
// gets each delivery once; an entity-ordered destination's next delivery goes once its head is
// dead; the CLI and the console show the answers escaped.

const RETRY = { limit: 2, backoff: '100ms', max: '100ms', jitter: 0 };
const ATTEMPTS = RETRY.limit + 1;
/** A breaker that counts but never opens: the test reads its count. */
const COUNTING_BREAKER = { failures: 1000, cooldown: '1h' };
const EVENTS = ['evt_1', 'evt_2', 'evt_3'];
const TOKEN = 'hostile-answers-console-token-0123456789';

const IIS_PAGE = Buffer.from(
  '\ufeff<html><head><title>Service Unavailable</title></head><body><h1>Service Unavailable</h1><p>HTTP Error 503. The service is unavailable.</p></body></html>',
  'utf16le',
);
const INVALID_UTF8 = Buffer.from([
  0x62, 0x61, 0x64, 0x20, 0xc3, 0x28, 0xff, 0xfe, 0xed, 0xa0, 0x80, 0x20, 0x65, 0x6e, 0x64,
]);
const COMPRESSED = Buffer.concat([
  Buffer.from('compressed\u0000'),
  Buffer.from([0x00, 0x01, 0xff, 0xfe, 0x1b]),
]);
const HUGE = Buffer.alloc(10 * 1024 * 1024, 'huge\u0000body ');
const HEADER_VALUE = 'café ✓ 日本 😀';

/** What each failing destination's receiver answers, every time. */
const HOSTILE: Readonly<Record<string, ByteAnswer>> = {
  nul: {
    status: 503,
    headers: { 'content-type': 'text/plain' },
    body: Buffer.from('upstream\u0000failed\u0000'),
  },
  utf16: { status: 503, headers: { 'content-type': 'text/html; charset=utf-16' }, body: IIS_PAGE },
  'bad-utf8': { status: 503, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: INVALID_UTF8 },
  gzip: {
    status: 503,
    headers: { 'content-type': 'application/octet-stream', 'content-encoding': 'gzip' },
    body: gzipSync(COMPRESSED),
  },
  header: {
    status: 503,
    headers: { 'content-type': 'text/plain', 'x-reason': HEADER_VALUE },
    body: Buffer.from('see x-reason'),
  },
  huge: { status: 503, headers: { 'content-type': 'application/octet-stream' }, body: HUGE },
};
/** The bytes each one's record keeps: the first 1200 of the body as fetch reads it (gzip decoded). */
const KEPT: Readonly<Record<string, Buffer>> = {
  nul: HOSTILE.nul!.body,
  utf16: IIS_PAGE,
  'bad-utf8': INVALID_UTF8,
  gzip: COMPRESSED,
  header: Buffer.from('see x-reason'),
  huge: HUGE.subarray(0, 1200),
};

let db: TestDatabase;
let receiver: ByteReceiver;
let claimer: Claimer;
let worker: TestWorker;
let relay: RunningDestinationRelay;
let boss: PgBoss;
let consoleServer: RunningConsole;
let config: Config;
let configFile: string;
const registry = new Registry();

function endpoints(url: string) {
  return {
    pay: {
      handler: 'record',
      destinations: {
        healthy: { url: `${url}/healthy`, retry: RETRY },
        ordered: { url: `${url}/ordered`, ordering: 'entity', retry: RETRY, breaker: COUNTING_BREAKER },
        ...Object.fromEntries(
          Object.keys(HOSTILE).map((name) => [
            name,
            { url: `${url}/${name}`, retry: RETRY, breaker: COUNTING_BREAKER },
          ]),
        ),
      },
    },
  };
}

beforeAll(async () => {
  db = await createTestDatabase();
  receiver = await startByteReceiver((path, request) => {
    const name = path.slice(1);
    const hostile = HOSTILE[name];
    if (hostile) return hostile;
    // The entity's head (its first version) fails as the NUL receiver does; the rest succeed.
    if (name === 'ordered' && request.eventId === 'evt_1') return HOSTILE.nul!;
    return { status: 200, body: Buffer.from('ok') };
  });
  const document = {
    ...workerConfigDocument(endpoints(receiver.url)),
    console: {
      port: 0,
      sessionSecret: 'hostile-answers-test-session-secret-0123456789',
      tokens: [{ name: 'ops', sha256: createHash('sha256').update(TOKEN).digest('hex') }],
    },
  };
  config = parseConfig(document, {});
  configFile = writeConfigFile(document);
  claimer = await Claimer.start(db.url, config);
  worker = await startTestWorker(db.url, config);
  relay = startDestinationRelay({
    pool: worker.pool,
    routes: routesFrom(config),
    logger: createLogger('silent'),
    metrics: createDestinationMetrics(registry),
    pollIntervalMs: 20,
  });
  boss = createBoss({
    connectionString: db.url,
    max: 2,
    supervise: false,
    applicationName: 'hostile-console',
  });
  boss.on('error', () => {});
  await boss.start();
  consoleServer = await startConsole({
    config,
    databaseUrl: db.url,
    boss,
    logger: createLogger('silent'),
    embedded: false,
    env: {},
  });
});

afterAll(async () => {
  await relay?.stop();
  await consoleServer?.stop();
  await boss?.stop({ graceful: false, close: true });
  await worker?.stop();
  await claimer?.stop();
  await receiver?.close();
  await db?.drop();
});

interface Row {
  id: string;
  destination: string;
  event_id: string;
  status: string;
  attempts: number;
  last_error: string | null;
}

async function rows(): Promise<Row[]> {
  const { rows: found } = await db.pool.query<Row>(
    `SELECT id::text AS id, destination, event_id, status, attempts, last_error
       FROM hookgate.destination_deliveries ORDER BY destination, event_id`,
  );
  return found;
}

const counted = async (name: string, labels: Record<string, string>) => {
  const metric = await registry.getSingleMetric(name)?.get();
  return (
    metric?.values
      .filter((v) => Object.entries(labels).every(([key, value]) => v.labels[key] === value))
      .reduce((sum, v) => sum + v.value, 0) ?? 0
  );
};

/** Control characters a screen would act on (newlines and tabs are layout). */
const controlsIn = (text: string) =>
  [...text]
    .filter((char) => char.charCodeAt(0) < 0x20 && !'\n\t'.includes(char))
    .map((char) => char.charCodeAt(0));

describe('destinations whose receivers answer bytes a text column cannot hold', () => {
  it('end each failing delivery dead after exactly its retry limit, with every attempt recorded, while the healthy destination gets each event once', {
    timeout: 90_000,
  }, async () => {
    await claimer.claim(
      'pay',
      EVENTS.map((eventId, n) => ({
        eventId,
        eventType: 'invoice.paid',
        entityType: 'thing',
        entityId: 'one',
        version: n + 1,
      })),
    );
    const destinations = 2 + Object.keys(HOSTILE).length;
    const settled = await waitFor(
      'every delivery to settle',
      async () => {
        const found = await rows();
        return found.length === destinations * EVENTS.length &&
          found.every((row) => row.status === 'delivered' || row.status === 'dead')
          ? found
          : null;
      },
      45_000,
    );
    // Nothing is left to send (no row waits, none is leased): no later attempt can happen.
    expect(settled.filter((row) => !['delivered', 'dead'].includes(row.status))).toEqual([]);

    const healthy = receiver.requests.filter((r) => r.path === '/healthy');
    expect(healthy.map((r) => r.eventId).sort()).toEqual(EVENTS);
    expect(new Set(healthy.map((r) => r.webhookId)).size).toBe(EVENTS.length);
    expect(
      settled.filter((row) => row.destination === 'healthy').map((row) => [row.status, row.attempts]),
    ).toEqual(EVENTS.map(() => ['delivered', 1]));

    for (const name of Object.keys(HOSTILE)) {
      const mine = settled.filter((row) => row.destination === name);
      expect(
        mine.map((row) => [row.event_id, row.status, row.attempts]),
        name,
      ).toEqual(EVENTS.map((eventId) => [eventId, 'dead', ATTEMPTS]));
      // Sent exactly the first attempt and its retries, per delivery.
      const sent = receiver.requests.filter((r) => r.path === `/${name}`);
      for (const eventId of EVENTS) {
        expect(
          sent.filter((r) => r.eventId === eventId),
          `${name} ${eventId}`,
        ).toHaveLength(ATTEMPTS);
      }
    }

    // The entity's head died after its attempts; the rest of the entity went after it, once each.
    const ordered = receiver.requests.filter((r) => r.path === '/ordered').map((r) => r.eventId);
    expect(ordered).toEqual([...Array(ATTEMPTS).fill('evt_1'), 'evt_2', 'evt_3']);
    expect(settled.filter((row) => row.destination === 'ordered').map((row) => row.status)).toEqual([
      'dead',
      'delivered',
      'delivered',
    ]);
  });

  it('records every attempt with its status and the bytes the receiver sent, escaped where shown as text', async () => {
    const { rows: attempts } = await db.pool.query<{
      destination: string;
      attempt: number;
      http_status: number | null;
      error: string;
      response_head: string | null;
      response_headers: string | null;
      response_bytes: Buffer | null;
      unrecorded: boolean;
    }>(
      `SELECT d.destination, a.attempt, a.http_status, a.error, a.response_head, a.response_headers,
              a.response_bytes, a.unrecorded
         FROM hookgate.destination_attempts a
         JOIN hookgate.destination_deliveries d ON d.id = a.delivery_id
        WHERE d.destination <> 'healthy' AND d.destination <> 'ordered'
        ORDER BY d.destination, d.event_id, a.attempt`,
    );
    expect(attempts).toHaveLength(Object.keys(HOSTILE).length * EVENTS.length * ATTEMPTS);
    for (const row of attempts) {
      expect(row.http_status, row.destination).toBe(503);
      expect(row.unrecorded).toBe(false);
      expect(row.response_bytes?.equals(KEPT[row.destination]!), row.destination).toBe(true);
      for (const text of [row.error, row.response_head ?? '', row.response_headers ?? '']) {
        expect(text.includes('\u0000'), row.destination).toBe(false);
        expect(text.length).toBeLessThanOrEqual(2_100);
      }
    }
    const first = (name: string) => attempts.find((row) => row.destination === name)!;
    expect(first('nul').error).toBe('HTTP 503: upstream\\x00failed\\x00');
    expect(first('utf16').error).toContain('<title>Service Unavailable</title>');
    expect(first('bad-utf8').error).toBe('HTTP 503: bad \\xc3(\\xff\\xfe\\xed\\xa0\\x80 end');
    expect(first('gzip').response_headers).toContain('content-encoding: gzip');
    expect(first('gzip').error).toBe('HTTP 503: compressed\\x00\\x00\\x01\\xff\\xfe\\x1b');
    expect(first('header').response_headers).toContain(`x-reason: ${HEADER_VALUE}`);
    expect(first('huge').error).toMatch(/^HTTP 503: huge\\x00body huge\\x00body .*…$/);
    expect(first('huge').response_head!.length).toBeLessThanOrEqual(301);
  });

  it('feeds each breaker every attempt, and counts no bookkeeping failure', async () => {
    // The relay's stop waits for every record and count in flight: nothing is raced.
    await relay.stop();
    const { rows: breakers } = await db.pool.query<{
      destination: string;
      state: string;
      consecutive_failures: number;
    }>(
      `SELECT destination, state, consecutive_failures FROM hookgate.destination_breaker ORDER BY destination`,
    );
    expect(breakers).toEqual(
      [...Object.keys(HOSTILE), 'ordered'].sort().map((destination) => ({
        destination,
        state: 'closed',
        // The hostile ones failed every attempt; the ordered one failed its head's, then succeeded.
        consecutive_failures: destination === 'ordered' ? 0 : EVENTS.length * ATTEMPTS,
      })),
    );
    for (const name of Object.keys(HOSTILE)) {
      expect(
        await counted('hookgate_destination_deliveries_total', { destination: name, outcome: 'dead' }),
      ).toBe(EVENTS.length);
      expect(await counted('hookgate_destination_bookkeeping_failures_total', { destination: name })).toBe(0);
    }
  });

  it('shows the answers escaped and bounded in deliveries show, events show and the console', async () => {
    const env = { DATABASE_URL: db.url, HOOKGATE_CONFIG: configFile };
    const nul = (await rows()).find((row) => row.destination === 'nul' && row.event_id === 'evt_1')!;
    const shown = await runCliInProcess(['deliveries', 'show', nul.id, '--bytes'], env);
    expect(shown.code, shown.output).toBe(0);
    expect(controlsIn(shown.stdout)).toEqual([]);
    expect(shown.stdout).toContain('HTTP 503: upstream\\x00failed\\x00');
    // The kept bytes as a hex dump: offset, bytes, and their printable characters.
    expect(shown.stdout).toContain(
      '00000000  75 70 73 74 72 65 61 6d 00 66 61 69 6c 65 64 00  upstream.failed.',
    );
    const json = await runCliInProcess(['deliveries', 'show', nul.id, '--json'], env);
    const parsed = JSON.parse(json.stdout) as { attempts: { response_hex: string | null }[] };
    expect(parsed.attempts.map((a) => a.response_hex)).toEqual(
      Array(ATTEMPTS).fill(HOSTILE.nul!.body.toString('hex')),
    );
    const huge = (await rows()).find((row) => row.destination === 'huge')!;
    const hugeShown = await runCliInProcess(['deliveries', 'show', huge.id, '--bytes'], env);
    // 1200 bytes kept: 75 lines of 16 per attempt, no more.
    expect(hugeShown.stdout.split('\n').filter((line) => /^[0-9a-f]{8} {2}/.test(line))).toHaveLength(
      75 * ATTEMPTS,
    );

    const event = await runCliInProcess(['events', 'show', 'evt_1', '--endpoint', 'pay'], env);
    expect(event.code, event.output).toBe(0);
    expect(controlsIn(event.stdout)).toEqual([]);

    const page = await fetch(new URL('/events/pay/evt_1', consoleServer.url), {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const html = await page.text();
    expect(page.status).toBe(200);
    expect(controlsIn(html)).toEqual([]);
    expect(html).toContain('HTTP 503: upstream\\x00failed\\x00');
    expect(html).toContain('&lt;title&gt;Service Unavailable&lt;/title&gt;');
    // The destinations page shows their figures (it shows no receiver text): each failing one dead 3.
    const listing = await fetch(new URL('/destinations', consoleServer.url), {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const rowsHtml = (await listing.text()).replace(/\s*\n\s*/g, '');
    expect(listing.status).toBe(200);
    for (const name of Object.keys(HOSTILE)) {
      const row = rowsHtml.split('<tr ').find((line) => line.includes(`aria-label="pay/${name}"`)) ?? '';
      expect(row, name).toContain(`<span class="status status-dead">${EVENTS.length}</span>`);
    }
  });
});
