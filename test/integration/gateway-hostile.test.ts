import { connect, createServer, type Server, type Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook, stripeEvent } from '../support/deliveries.ts';
import {
  STRIPE_SECRET,
  SW_OLD_SECRET,
  SW_SECRET,
  startTestGateway,
  type TestGateway,
  testConfig,
} from '../support/gateway.ts';
import { jsonOf, rawExchange, statusOf } from '../support/raw-http.ts';
import { signatureHeaders } from '../support/sign.ts';

// Requests no provider sends: lying lengths, endless bodies, slow clients, wrong methods.
let db: TestDatabase;
let gateway: TestGateway;
let port: number;

const REQUEST_TIMEOUT_MS = 2_000;

beforeAll(async () => {
  db = await createTestDatabase();
  gateway = await startTestGateway(db.url, testConfig({ server: { requestTimeout: '2s' } }));
  port = Number(new URL(gateway.url).port);
});

afterAll(async () => {
  await gateway?.stop();
  await db?.drop();
});

/** Rows of endpoint alpha, which only ever receives refused requests in this file. */
async function inboxRows(): Promise<number> {
  return (await db.pool.query(`SELECT count(*)::int AS n FROM hookgate.inbox WHERE endpoint = 'alpha'`))
    .rows[0].n;
}

async function counted(outcome: string, endpoint?: string): Promise<number> {
  const metric = gateway.registry.getSingleMetric('hookgate_deliveries_total');
  const values = (await metric?.get())?.values ?? [];
  return values
    .filter((v) => v.labels.outcome === outcome && (endpoint === undefined || v.labels.endpoint === endpoint))
    .reduce((sum, v) => sum + v.value, 0);
}

function head(path: string, headers: Record<string, string>, method = 'POST'): string {
  const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`);
  return `${method} ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\n${lines.join('')}\r\n`;
}

const MiB = 1024 * 1024;

describe('oversized bodies', () => {
  it('refuses a declared Content-Length over the limit with 413 at once and closes, reading next to nothing', async () => {
    const before = await counted('body_too_large', 'alpha');
    const delivery = standardWebhook(SW_SECRET);
    const exchange = await rawExchange(port, {
      head: head('/webhooks/alpha', { ...delivery.headers, 'content-length': '100000000000' }),
      flood: { chunk: Buffer.alloc(64 * 1024, 97), chunked: false },
      deadlineMs: 8_000,
    });
    expect(statusOf(exchange.response)).toBe(413);
    expect(jsonOf(exchange.response).error).toBe('body_too_large');
    expect(exchange.response.toLowerCase()).toContain('connection: close');
    // The server closed the connection itself, well before any timeout...
    expect(exchange.ended).toBe('closed');
    expect(exchange.elapsedMs).toBeLessThan(REQUEST_TIMEOUT_MS);
    // ...and what the client could push is bounded by socket buffers, not by the declared length.
    expect(exchange.bodyBytesWritten).toBeLessThan(32 * MiB);
    expect(await counted('body_too_large', 'alpha')).toBe(before + 1);
    expect(await inboxRows()).toBe(0);
  });

  it('closes at once on a huge body sent to an unknown endpoint or a path that takes none', async () => {
    for (const path of ['/webhooks/nope', '/nothing-here']) {
      const exchange = await rawExchange(port, {
        head: head(path, { 'content-type': 'application/json', 'content-length': '100000000000' }),
        flood: { chunk: Buffer.alloc(64 * 1024, 97), chunked: false },
        deadlineMs: 8_000,
      });
      expect(statusOf(exchange.response)).toBe(404);
      expect(exchange.ended).toBe('closed');
      expect(exchange.elapsedMs).toBeLessThan(REQUEST_TIMEOUT_MS);
      expect(exchange.bodyBytesWritten).toBeLessThan(32 * MiB);
    }
  });

  it('aborts a chunked body as soon as it passes the limit', async () => {
    const delivery = standardWebhook(SW_SECRET);
    const { 'content-length': _drop, ...headers } = delivery.headers;
    const exchange = await rawExchange(port, {
      head: head('/webhooks/alpha', { ...headers, 'transfer-encoding': 'chunked' }),
      flood: { chunk: Buffer.alloc(64 * 1024, 97), chunked: true },
      deadlineMs: 8_000,
    });
    expect(statusOf(exchange.response)).toBe(413);
    expect(jsonOf(exchange.response).error).toBe('body_too_large');
    expect(exchange.ended).toBe('closed');
    expect(exchange.elapsedMs).toBeLessThan(REQUEST_TIMEOUT_MS);
    expect(exchange.bodyBytesWritten).toBeLessThan(32 * MiB);
    expect(await inboxRows()).toBe(0);
  });
});

describe('slow and truncated requests', () => {
  it('answers a body shorter than its Content-Length with 408 request_timeout, and counts exactly that', async () => {
    const before = await counted('request_timeout', 'alpha');
    const aborted = await counted('body_unreadable');
    const delivery = standardWebhook(SW_SECRET);
    const exchange = await rawExchange(port, {
      head:
        head('/webhooks/alpha', {
          ...delivery.headers,
          'content-length': String(delivery.body.length + 50),
        }) + delivery.body,
      deadlineMs: 10_000,
    });
    expect(statusOf(exchange.response)).toBe(408);
    expect(jsonOf(exchange.response).error).toBe('request_timeout');
    // Enforced within about a second of the limit, not at Node's 30 s check interval.
    expect(exchange.elapsedMs).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 100);
    expect(exchange.elapsedMs).toBeLessThan(REQUEST_TIMEOUT_MS + 1_500);
    expect(await counted('request_timeout', 'alpha')).toBe(before + 1);
    expect(await counted('body_unreadable')).toBe(aborted);
    expect(await inboxRows()).toBe(0);
  });

  it('bounds slowloris on headers and on the body while other clients keep being served', async () => {
    const delivery = standardWebhook(SW_SECRET);
    const slow = [
      // Headers one byte every 200 ms: never completes within the limit.
      ...Array.from({ length: 20 }, () =>
        rawExchange(port, {
          head: 'POST /webhooks/alpha HTTP/1.1\r\n',
          trickle: 'x-slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n',
          trickleIntervalMs: 200,
          deadlineMs: 10_000,
        }),
      ),
      // A body one byte every 200 ms.
      ...Array.from({ length: 20 }, () =>
        rawExchange(port, {
          head: head('/webhooks/alpha', {
            ...delivery.headers,
            'content-length': String(delivery.body.length),
          }),
          trickle: delivery.body,
          trickleIntervalMs: 200,
          deadlineMs: 10_000,
        }),
      ),
    ];
    // Meanwhile, genuine deliveries are answered promptly.
    const served: number[] = [];
    for (let i = 0; i < 10; i += 1) {
      const started = Date.now();
      const reply = await post(`${gateway.url}/webhooks/beta`, standardWebhook(SW_SECRET));
      expect(reply.status).toBe(200);
      served.push(Date.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(Math.max(...served)).toBeLessThan(1_000);
    const results = await Promise.all(slow);
    for (const result of results) {
      expect(result.ended).toBe('closed');
      expect(result.elapsedMs).toBeLessThan(REQUEST_TIMEOUT_MS + 1_500);
      expect(statusOf(result.response)).toBe(408);
      expect(jsonOf(result.response).error).toBe('request_timeout');
    }
    const stored = await db.pool.query(
      `SELECT count(*)::int AS n FROM hookgate.inbox WHERE endpoint = 'alpha'`,
    );
    expect(stored.rows[0].n).toBe(0);
  });

  it('closes a connection that sends nothing at all with a JSON 408 once the limit passes', async () => {
    const exchange = await rawExchange(port, { head: '', deadlineMs: 8_000 });
    expect(exchange.ended).toBe('closed');
    expect(exchange.response).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(jsonOf(exchange.response).error).toBe('request_timeout');
    expect(exchange.elapsedMs).toBeLessThan(REQUEST_TIMEOUT_MS + 1_500);
  });
});

describe('paths and methods', () => {
  it('answers GET and PUT on a webhook path with a JSON 405, counted', async () => {
    const before = await counted('method_not_allowed', 'alpha');
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const res = await fetch(`${gateway.url}/webhooks/alpha`, { method });
      expect(res.status).toBe(405);
      expect(res.headers.get('content-type')).toContain('application/json');
      expect(res.headers.get('allow')).toBe('POST');
      expect(await res.json()).toMatchObject({ error: 'method_not_allowed' });
    }
    expect(await counted('method_not_allowed', 'alpha')).toBe(before + 3);
  });

  it('answers unknown paths with a JSON 404 that does not echo the path, counted', async () => {
    const before = await counted('not_found', '(unknown)');
    for (const path of ['/nope', '/webhooks', '/webhooks/alpha/extra', '/<script>alert(1)</script>']) {
      const res = await fetch(`${gateway.url}${path}`, { method: 'POST' });
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toContain('application/json');
      const text = await res.text();
      expect(JSON.parse(text)).toMatchObject({ error: 'not_found' });
      expect(text).not.toContain('script');
      expect(text).not.toContain('nope');
    }
    expect(await counted('not_found', '(unknown)')).toBe(before + 4);
  });

  it('answers an undecodable endpoint name as endpoint_unknown, not body_unreadable', async () => {
    const res = await fetch(`${gateway.url}/webhooks/%zz`, { method: 'POST', body: '{}' });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: 'endpoint_unknown' });
  });
});

describe('hostile content in signed deliveries', () => {
  it('refuses invalid UTF-8 as body_not_json instead of storing replacement characters', async () => {
    const body = Buffer.concat([
      Buffer.from('{"type":"thing.updated","name":"'),
      Buffer.from([0xc3, 0x28]),
      Buffer.from('"}'),
    ]);
    // Signed over the exact bytes, with the scheme's formula (test/support/sign.ts).
    const headers = {
      'content-type': 'application/json',
      ...signatureHeaders('standard-webhooks', {
        body,
        secret: SW_SECRET,
        timestamp: Math.floor(Date.now() / 1000),
        id: 'msg_not_utf8',
      }),
    };
    const exact = await post(`${gateway.url}/webhooks/alpha`, { body, headers });
    expect([exact.status, exact.json.error]).toEqual([400, 'body_not_json']);
    expect(await inboxRows()).toBe(0);
  });

  it('quarantines (never stores in the inbox) ids that are blank or carry control characters or lone surrogates', async () => {
    for (const id of ['   ', 'evt_1\n{"level":50}', 'evt\u0000x', 'evt\u0085', 'a\ud800b']) {
      const delivery = stripeEvent(STRIPE_SECRET, { eventId: 'placeholder' });
      const body = delivery.body.replace('"placeholder"', JSON.stringify(id));
      const header = new Stripe('sk_test_x').webhooks.generateTestHeaderString({
        payload: body,
        secret: STRIPE_SECRET,
      });
      const reply = await post(`${gateway.url}/webhooks/stripe`, {
        body,
        headers: { 'content-type': 'application/json', 'stripe-signature': header },
      });
      // Verified, so kept in quarantine (promise 8) and acknowledged; never an inbox event.
      expect([id, reply.status, reply.json]).toEqual([
        id,
        200,
        { status: 'quarantined', reason: 'event_id_invalid' },
      ]);
    }
    const stored = await db.pool.query(
      `SELECT count(*)::int AS n FROM hookgate.inbox WHERE endpoint = 'stripe'`,
    );
    expect(stored.rows[0].n).toBe(0);
  });

  it('stores SQL and log-injection text in every field of a valid delivery verbatim, as data', async () => {
    const hostile = "'; DROP TABLE hookgate.inbox; -- $1 ${DATABASE_URL} <script>";
    const eventId = `evt_${hostile}`;
    const delivery = stripeEvent(STRIPE_SECRET, {
      eventId,
      type: `invoice.${hostile}`,
      object: { id: `in_${hostile}`, object: hostile, note: `line\n{"level":60,"msg":"forged"}` },
    });
    const reply = await post(`${gateway.url}/webhooks/stripe`, delivery);
    expect([reply.status, reply.json.status]).toEqual([200, 'accepted']);
    const row = await db.pool.query(
      `SELECT event_type, entity_type, entity_id, payload FROM hookgate.inbox WHERE endpoint = 'stripe' AND event_id = $1`,
      [eventId],
    );
    expect(row.rows).toEqual([
      {
        event_type: `invoice.${hostile}`,
        entity_type: hostile,
        entity_id: `in_${hostile}`,
        payload: JSON.parse(delivery.body),
      },
    ]);
  });
});

describe('secrets of other endpoints', () => {
  it("refuses a delivery signed with another endpoint's secret with 401, storing nothing", async () => {
    // alpha accepts SW_OLD_SECRET (rotation); beta does not.
    const delivery = standardWebhook(SW_OLD_SECRET);
    expect((await post(`${gateway.url}/webhooks/alpha`, delivery)).status).toBe(200);
    const reply = await post(`${gateway.url}/webhooks/beta`, standardWebhook(SW_OLD_SECRET));
    expect([reply.status, reply.json.error]).toEqual([401, 'signature_invalid']);
    await db.pool.query(`DELETE FROM hookgate.inbox WHERE endpoint = 'alpha'`);
  });
});

describe('errors do not leak', () => {
  it("quarantines an unstorable payload, answering without PostgreSQL's error text", async () => {
    const unstorable = standardWebhook(SW_SECRET, { body: '{"type":"thing.updated","text":"a\\u0000b"}' });
    const reply = await post(`${gateway.url}/webhooks/alpha`, unstorable);
    expect([reply.status, reply.json]).toEqual([
      200,
      { status: 'quarantined', reason: 'payload_unstorable' },
    ]);
  });
});

describe('compressed bodies', () => {
  it('refuses a gzip body with 415 whether the signature covers the compressed or the plain bytes', async () => {
    const plain = standardWebhook(SW_SECRET);
    const zipped = gzipSync(plain.body);
    // Signed over the plain body (as a provider would), sent compressed.
    const overPlain = await post(`${gateway.url}/webhooks/alpha`, {
      body: zipped,
      headers: { ...plain.headers, 'content-encoding': 'gzip' },
    });
    expect([overPlain.status, overPlain.json.error]).toEqual([415, 'encoding_unsupported']);
    // Signed over the compressed bytes.
    const overZipped = standardWebhook(SW_SECRET, { body: zipped.toString('latin1') });
    const reply = await post(`${gateway.url}/webhooks/alpha`, {
      body: zipped,
      headers: { ...overZipped.headers, 'content-encoding': 'gzip' },
    });
    expect([reply.status, reply.json.error]).toEqual([415, 'encoding_unsupported']);
    expect(await inboxRows()).toBe(0);
  });
});

describe('/readyz while the database hangs', () => {
  it('answers not ready within the probe bound instead of waiting for the query timeout', async () => {
    // A TCP relay to PostgreSQL that can stop forwarding: the database "hangs" without closing.
    const target = new URL(db.url);
    let frozen = false;
    const sockets: Socket[] = [];
    const relay: Server = createServer((client) => {
      const upstream = connect(Number(target.port), target.hostname);
      sockets.push(client, upstream);
      client.on('data', (chunk) => {
        if (!frozen) upstream.write(chunk);
      });
      upstream.on('data', (chunk) => {
        if (!frozen) client.write(chunk);
      });
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    const relayPort = (relay.address() as { port: number }).port;
    const url = new URL(db.url);
    url.port = String(relayPort);
    const hanging = await startTestGateway(url.toString(), testConfig());
    try {
      expect((await fetch(`${hanging.url}/readyz`)).status).toBe(200);
      frozen = true;
      const started = Date.now();
      const res = await fetch(`${hanging.url}/readyz`);
      const elapsed = Date.now() - started;
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject({ status: 'not_ready' });
      expect(elapsed).toBeLessThan(3_000);
    } finally {
      for (const socket of sockets) socket.destroy();
      await hanging.stop();
      relay.close();
    }
  });
});
