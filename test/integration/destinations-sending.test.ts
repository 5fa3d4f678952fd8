import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import type { Config } from '../../services/core/config/schema.ts';
import { freePort } from '../../services/core/db/embedded.ts';
import { type Routes, routesFrom } from '../../services/core/destinations/routes.ts';
import { createLogger } from '../../services/core/logging.ts';
import { type RunningDestinationRelay, startDestinationRelay } from '../../services/worker/destinations.ts';
import { runCliInProcess } from '../support/cli.ts';
import { createTestDatabase, createTestPool, type TestDatabase } from '../support/database.ts';
import { type FakeDownstream, startFakeDownstream } from '../support/fake-downstream.ts';
import {
  Claimer,
  startTestWorker,
  type TestWorker,
  waitFor,
  workerConfigDocument,
  writeConfigFile,
} from '../support/worker-harness.ts';

// How a destination sends, against real local receivers that record every request: what the
// forward handler's relay used to prove for itself (retries and their end, Retry-After, header
// values taken from the provider's text, a request that cannot be sent, a stop mid-request, two
// attempts that overlap, a token in the URL), proven where `forward` lives now.

const FAST = { backoff: '100ms', max: '100ms', jitter: 0 };
const TOKEN = 'tok-8d1f0c7a2b9e';

let db: TestDatabase;
let downstream: FakeDownstream;
let claimer: Claimer;
let worker: TestWorker;
let config: Config;
let configFile: string;
const relays: RunningDestinationRelay[] = [];

/** A receiver whose first request hangs until released, then answers 503; the rest 200. */
let held: Server;
let heldUrl: string;
const heldRequests: { at: number; headers: IncomingHttpHeaders }[] = [];
let releaseHeld: () => void = () => {};
const heldUntilReleased = new Promise<void>((resolve) => {
  releaseHeld = resolve;
});

/** A port nothing listens on (a connection there is refused). */
let closedPort: number;

function endpoints(): Record<string, Record<string, unknown>> {
  const url = downstream.url;
  return {
    out: {
      handler: 'record',
      destinations: {
        down: { url: `${url}/down`, filter: { types: ['down.*'] }, retry: { limit: 2, ...FAST } },
        slow: {
          url: `${url}/slow`,
          filter: { types: ['slow.*'] },
          timeout: '300ms',
          retry: { limit: 3, ...FAST },
        },
        busy: {
          url: `${url}/busy`,
          filter: { types: ['busy.*'] },
          retry: { limit: 3, backoff: '100ms', max: '1m', jitter: 0 },
        },
        greedy: {
          url: `${url}/greedy`,
          filter: { types: ['greedy.*'] },
          retry: { limit: 3, backoff: '100ms', max: '2s', jitter: 0 },
        },
        values: { url: `${url}/values`, filter: { types: ['values.*'] } },
        gone: {
          url: `http://127.0.0.1:${closedPort}/gone`,
          filter: { types: ['gone.*'] },
          retry: { limit: 1, ...FAST },
        },
        hang: {
          url: `${url}/hang`,
          filter: { types: ['hang.*'] },
          timeout: '60s',
          retry: { limit: 3, ...FAST },
        },
        token: { url: `${url}/hooks/\${OUT_TOKEN}`, filter: { types: ['token.*'] } },
        once: { url: `${url}/once`, filter: { types: ['once.*'] } },
      },
    },
    // Its own endpoint, so the relays of the overlap test send nothing else.
    overlap: {
      handler: 'record',
      destinations: { late: { url: heldUrl, timeout: '60s', retry: { limit: 5, ...FAST } } },
    },
  };
}

function only(routes: Routes, endpoint: string, destination?: string): Routes {
  const list = (routes.get(endpoint) ?? []).filter((route) => !destination || route.name === destination);
  return new Map([[endpoint, list]]);
}

function relay(routes: Routes, pool = worker.pool, stopTimeoutMs = 15_000): RunningDestinationRelay {
  const running = startDestinationRelay({
    pool,
    routes,
    logger: createLogger('silent'),
    pollIntervalMs: 50,
    stopTimeoutMs,
  });
  relays.push(running);
  return running;
}

async function delivery(destination: string, eventId: string) {
  const { rows } = await db.pool.query<{
    id: string;
    status: string;
    attempts: number;
    http_status: number | null;
    last_error: string | null;
    webhook_id: string;
    gap_seconds: number | null;
  }>(
    `SELECT id::text AS id, status, attempts, http_status, last_error, webhook_id,
            extract(epoch FROM next_attempt_at - last_attempt_at)::float8 AS gap_seconds
       FROM hookgate.destination_deliveries WHERE destination = $1 AND event_id = $2`,
    [destination, eventId],
  );
  return rows[0];
}

const settled = (destination: string, eventId: string) =>
  waitFor(`${destination}/${eventId} to settle`, async () => {
    const row = await delivery(destination, eventId);
    return row && (row.status === 'delivered' || row.status === 'dead') ? row : null;
  });

const sentTo = (path: string) => downstream.requests.filter((request) => request.path === path);

beforeAll(async () => {
  db = await createTestDatabase();
  downstream = await startFakeDownstream();
  held = createServer(async (req, res) => {
    for await (const _ of req);
    heldRequests.push({ at: Date.now(), headers: req.headers });
    if (heldRequests.length === 1) {
      await heldUntilReleased;
      res.writeHead(503).end('unavailable');
    } else res.writeHead(200).end();
  });
  held.listen(0, '127.0.0.1');
  await once(held, 'listening');
  heldUrl = `http://127.0.0.1:${(held.address() as AddressInfo).port}/late`;
  closedPort = await freePort();
  const env = { OUT_TOKEN: TOKEN };
  const document = workerConfigDocument(endpoints());
  config = parseConfig(document, env);
  configFile = writeConfigFile(document);
  claimer = await Claimer.start(db.url, config);
  worker = await startTestWorker(db.url, config);
});

afterAll(async () => {
  releaseHeld();
  for (const running of relays) await running.stop();
  await worker?.stop();
  await claimer?.stop();
  await downstream?.close();
  held?.closeAllConnections();
  held?.close();
  await db?.drop();
});

describe('a destination sends', () => {
  it('retries 5xx, 429 and timeouts with the same webhook-id, and ends dead after retry.limit + 1 attempts', async () => {
    relay(only(routesFrom(config), 'out', 'down'));
    relay(only(routesFrom(config), 'out', 'slow'));
    downstream.script('/down', [503, 503, 503, 200]);
    downstream.script('/slow', [{ status: 200, delayMs: 1_500 }, 429, 200]);
    await claimer.claim('out', [
      { eventId: 'evt_down', eventType: 'down.one' },
      { eventId: 'evt_slow', eventType: 'slow.one' },
    ]);
    const down = await settled('down', 'evt_down');
    expect(down).toMatchObject({ status: 'dead', attempts: 3, http_status: 503 });
    expect(down.last_error).toMatch(/^HTTP 503/);
    expect(sentTo('/down').map((r) => r.headers['webhook-id'])).toEqual([
      down.webhook_id,
      down.webhook_id,
      down.webhook_id,
    ]);
    const slow = await settled('slow', 'evt_slow');
    expect(slow).toMatchObject({ status: 'delivered', attempts: 3, http_status: 200 });
    const attempts = await db.pool.query<{ http_status: number | null; error: string | null }>(
      'SELECT http_status, error FROM hookgate.destination_attempts WHERE delivery_id = $1 ORDER BY attempt',
      [slow.id],
    );
    expect(attempts.rows.map((row) => row.http_status)).toEqual([null, 429, 200]);
    expect(attempts.rows[0]?.error).toBe('timed out after 300 ms');
    expect(sentTo('/slow').map((r) => r.headers['webhook-id'])).toEqual([
      slow.webhook_id,
      slow.webhook_id,
      slow.webhook_id,
    ]);
  });

  it('waits at least what a 429 or 503 asked for (Retry-After), capped at retry.max', async () => {
    relay(only(routesFrom(config), 'out', 'busy'));
    relay(only(routesFrom(config), 'out', 'greedy'));
    const date = new Date(Date.now() + 30_000).toUTCString();
    downstream.script('/busy', [
      { status: 429, headers: { 'retry-after': '40' } },
      { status: 503, headers: { 'retry-after': date } },
      200,
    ]);
    downstream.script('/greedy', [{ status: 429, headers: { 'retry-after': '3600' } }, 200]);
    await claimer.claim('out', [
      { eventId: 'evt_busy', eventType: 'busy.one' },
      { eventId: 'evt_greedy', eventType: 'greedy.one' },
    ]);
    // The backoff says 100 ms; the receiver asked for 40 s: the next attempt is due no sooner.
    const first = await waitFor('the first busy attempt recorded', async () => {
      const row = await delivery('busy', 'evt_busy');
      return row?.status === 'retrying' && row.attempts === 1 ? row : null;
    });
    expect(first.gap_seconds).toBeGreaterThanOrEqual(40);
    // Time is a parameter: the wait is brought forward instead of sat out.
    await db.pool.query(`UPDATE hookgate.destination_deliveries SET next_attempt_at = now() WHERE id = $1`, [
      first.id,
    ]);
    // An HTTP-date, 30 s ahead (whole seconds, so at least 28 s once rounded and sent).
    const second = await waitFor('the second busy attempt recorded', async () => {
      const row = await delivery('busy', 'evt_busy');
      return row?.status === 'retrying' && row.attempts === 2 ? row : null;
    });
    expect(second.gap_seconds).toBeGreaterThanOrEqual(28);
    await db.pool.query(`UPDATE hookgate.destination_deliveries SET next_attempt_at = now() WHERE id = $1`, [
      second.id,
    ]);
    expect(await settled('busy', 'evt_busy')).toMatchObject({ status: 'delivered', attempts: 3 });
    // An hour asked: capped at retry.max (2 s), far below what was asked.
    const greedy = await waitFor('the greedy attempt recorded', async () => {
      const row = await delivery('greedy', 'evt_greedy');
      return row?.status === 'retrying' ? row : null;
    });
    expect(greedy.gap_seconds).toBeGreaterThanOrEqual(2);
    expect(greedy.gap_seconds).toBeLessThan(3_600);
    expect(await settled('greedy', 'evt_greedy')).toMatchObject({ status: 'delivered', attempts: 2 });
  });

  it('sends event ids and types that are not legal header values percent-encoded, at the first attempt', async () => {
    relay(only(routesFrom(config), 'out', 'values'));
    const cases = [
      ['evt-1\r\nx-injected: 1', 'values.\r\nopened'],
      ['evt-2\u001b[31m', 'values.\u001b]0;owned\u0007'],
      ['évt-3-✓-😀', 'values.заказ'],
      ['evt-4-%41', 'values.type with %20 and spaces'],
      // An escape and the character it stands for stay two values (and two webhook-ids).
      ['evt-6-\n', 'values.t'],
      ['evt-6-%0A', 'values.t'],
      ['evt_plain-5:a/b', 'values.placed'],
    ] as const;
    await claimer.claim(
      'out',
      cases.map(([eventId, eventType]) => ({ eventId, eventType })),
    );
    for (const [eventId] of cases)
      expect(await settled('values', eventId)).toMatchObject({ status: 'delivered', attempts: 1 });
    const sent = sentTo('/values');
    expect(sent).toHaveLength(cases.length);
    for (const [eventId, eventType] of cases) {
      const request = sent.find(
        (r) => decodeURIComponent(String(r.headers['x-hookgate-event-id'])) === eventId,
      );
      expect(request, eventId).toBeDefined();
      expect(decodeURIComponent(String(request!.headers['x-hookgate-event-type']))).toBe(eventType);
      expect(request!.headers['x-injected']).toBeUndefined();
      for (const name of ['x-hookgate-event-id', 'x-hookgate-event-type', 'webhook-id', 'idempotency-key'])
        expect(String(request!.headers[name])).toMatch(/^[\x21-\x7e][\x20-\x7e]*$/);
    }
    const six = sent.filter((r) => String(r.headers['x-hookgate-event-id']).startsWith('evt-6-'));
    expect(new Set(six.map((r) => r.headers['x-hookgate-event-id'])).size).toBe(2);
    expect(new Set(six.map((r) => r.headers['webhook-id'])).size).toBe(2);
    // Printable ASCII without % goes as it is.
    const plain = sent.find((r) => r.headers['x-hookgate-event-id'] === 'evt_plain-5:a/b');
    expect(plain?.headers['x-hookgate-event-type']).toBe('values.placed');
  });

  it('retries a refused connection like a 5xx, and ends dead with the network error', async () => {
    relay(only(routesFrom(config), 'out', 'gone'));
    await claimer.claim('out', [{ eventId: 'evt_gone', eventType: 'gone.one' }]);
    const row = await settled('gone', 'evt_gone');
    expect(row).toMatchObject({ status: 'dead', attempts: 2, http_status: null });
    expect(row.last_error).toBe('request failed: ECONNREFUSED');
  });

  it('a stop cuts off a request still open after its bound; the next relay sends it again, same webhook-id', async () => {
    downstream.script('/hang', [{ status: 200, delayMs: 30_000 }, 200]);
    const first = relay(only(routesFrom(config), 'out', 'hang'), worker.pool, 300);
    await claimer.claim('out', [{ eventId: 'evt_hang', eventType: 'hang.one' }]);
    await downstream.waitFor('/hang', 1);
    await first.stop();
    expect(await delivery('hang', 'evt_hang')).toMatchObject({
      status: 'retrying',
      attempts: 1,
      last_error: 'aborted: the relay stopped',
    });
    relay(only(routesFrom(config), 'out', 'hang'));
    const row = await settled('hang', 'evt_hang');
    expect(row).toMatchObject({ status: 'delivered', attempts: 2 });
    expect(sentTo('/hang').map((r) => r.headers['webhook-id'])).toEqual([row.webhook_id, row.webhook_id]);
  });

  it('an attempt that outlived its lease cannot overwrite the delivery another attempt made', async () => {
    const routes = only(routesFrom(config), 'overlap');
    // Relay A (as one worker) on its own pool: its request hangs at the receiver.
    const poolA = createTestPool(db.url, 'relay-a', 2);
    try {
      relay(routes, poolA);
      await claimer.claim('overlap', [{ eventId: 'evt_overlap' }]);
      await waitFor('attempt A at the receiver', async () => heldRequests.length === 1);
      expect(await delivery('late', 'evt_overlap')).toMatchObject({ status: 'sending', attempts: 1 });
      // A's lease runs out (backdated, not waited for): another attempt takes the delivery over
      // (relay B, as a second worker, or A's own next claim).
      await db.pool.query(
        `UPDATE hookgate.destination_deliveries SET lease_until = now() - interval '1 second'
          WHERE destination = 'late' AND event_id = 'evt_overlap'`,
      );
      relay(routes);
      const delivered = await waitFor('attempt 2 delivered', async () => {
        const row = await delivery('late', 'evt_overlap');
        return row?.status === 'delivered' ? row : null;
      });
      expect(delivered).toMatchObject({ attempts: 2, http_status: 200 });
      // A gets its 503 now, and records it: its attempt is kept, the delivery's state is not touched.
      releaseHeld();
      await waitFor('attempt A recorded', async () => {
        const { rows } = await db.pool.query(
          `SELECT 1 FROM hookgate.destination_attempts a JOIN hookgate.destination_deliveries d ON d.id = a.delivery_id
            WHERE d.event_id = 'evt_overlap' AND a.attempt = 1 AND a.http_status = 503`,
        );
        return rows.length === 1;
      });
      expect(await delivery('late', 'evt_overlap')).toMatchObject({
        status: 'delivered',
        attempts: 2,
        http_status: 200,
        last_error: null,
      });
      expect(heldRequests.map((r) => r.headers['webhook-id'])).toEqual([
        delivered.webhook_id,
        delivered.webhook_id,
      ]);
    } finally {
      for (const running of relays.splice(-2)) await running.stop();
      await poolA.end();
    }
  });

  it('a token in the URL reaches the receiver and is stored nowhere: the row names the destination only', async () => {
    relay(only(routesFrom(config), 'out', 'token'));
    await claimer.claim('out', [{ eventId: 'evt_token', eventType: 'token.one' }]);
    expect(await settled('token', 'evt_token')).toMatchObject({ status: 'delivered', attempts: 1 });
    expect(sentTo(`/hooks/${TOKEN}`)).toHaveLength(1);
    const stored = await db.pool.query<{ n: number }>(
      `SELECT (SELECT count(*) FROM hookgate.destination_deliveries d WHERE d::text LIKE $1)
            + (SELECT count(*) FROM hookgate.destination_attempts a WHERE a::text LIKE $1)
            + (SELECT count(*) FROM pgboss.job j WHERE j::text LIKE $1) AS n`,
      [`%${TOKEN}%`],
    );
    expect(Number(stored.rows[0]!.n)).toBe(0);
    const shown = await runCliInProcess(['events', 'show', 'evt_token', '--endpoint', 'out', '--json'], {
      DATABASE_URL: db.url,
      HOOKGATE_CONFIG: configFile,
      OUT_TOKEN: TOKEN,
    });
    expect(shown.code, shown.output).toBe(0);
    expect(shown.output).toContain('"destination": "token"');
    expect(shown.output).not.toContain(TOKEN);
  });

  it('an event applied again once its inbox row is gone is not sent again where it was delivered', async () => {
    relay(only(routesFrom(config), 'out', 'once'));
    await claimer.claim('out', [{ eventId: 'evt_once', eventType: 'once.one' }]);
    const first = await settled('once', 'evt_once');
    expect(first).toMatchObject({ status: 'delivered', attempts: 1 });
    // Pruned, and its key gone past the dedupe horizon, then received again (a provider's very late
    // retry, a forced replay): applied again.
    await db.pool.query(`DELETE FROM hookgate.inbox WHERE endpoint = 'out' AND event_id = 'evt_once'`);
    await db.pool.query(`DELETE FROM hookgate.inbox_keys WHERE endpoint = 'out' AND event_id = 'evt_once'`);
    await claimer.claim('out', [{ eventId: 'evt_once', eventType: 'once.one' }]);
    await waitFor('evt_once applied again', async () => {
      const { rows } = await db.pool.query(
        `SELECT status FROM hookgate.inbox WHERE endpoint = 'out' AND event_id = 'evt_once'`,
      );
      return rows[0]?.status === 'processed';
    });
    // A sentinel through the same destination: once it is delivered, anything queued before it was sent.
    await claimer.claim('out', [{ eventId: 'evt_once_sentinel', eventType: 'once.one' }]);
    await settled('once', 'evt_once_sentinel');
    expect(sentTo('/once').map((r) => r.headers['x-hookgate-event-id'])).toEqual([
      'evt_once',
      'evt_once_sentinel',
    ]);
    expect(await delivery('once', 'evt_once')).toMatchObject({
      id: first.id,
      status: 'delivered',
      attempts: 1,
    });
  });
});
