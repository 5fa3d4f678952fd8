import { createHmac, generateKeyPairSync, sign } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { startTestGateway, type TestGateway, testConfig } from '../support/gateway.ts';

// The providers' questions through the real gateway and PostgreSQL: each is answered as its
// provider requires (status, headers, body type), and none leaves a row behind; the events
// that follow them are stored as usual.
const SECRET = 'handshake-test-secret';
const discordKeys = generateKeyPairSync('ed25519');
const DISCORD_KEY = discordKeys.publicKey
  .export({ type: 'spki', format: 'der' })
  .subarray(12)
  .toString('hex');
const TWILIO_URL = 'https://hooks.example.com/webhooks/twilio';

let db: TestDatabase;
let gateway: TestGateway;

beforeAll(async () => {
  db = await createTestDatabase();
  gateway = await startTestGateway(
    db.url,
    testConfig({
      endpoints: {
        asana: { provider: 'asana', secrets: [SECRET] },
        dropbox: { provider: 'dropbox', secrets: [SECRET] },
        okta: { provider: 'okta', secrets: [SECRET] },
        zoom: { provider: 'zoom', secrets: [SECRET] },
        discord: { provider: 'discord', secrets: [DISCORD_KEY] },
        twitch: { provider: 'twitch', secrets: [SECRET] },
        xero: { provider: 'xero', secrets: [SECRET] },
        twilio: { provider: 'twilio', secrets: [SECRET], url: TWILIO_URL },
        mailgun: { provider: 'mailgun', secrets: [SECRET] },
      },
    }),
  );
});

afterAll(async () => {
  await gateway?.stop();
  await db?.drop();
});

const rows = async (endpoint: string) =>
  (
    await db.pool.query('SELECT event_id, event_type, payload FROM hookgate.inbox WHERE endpoint = $1', [
      endpoint,
    ])
  ).rows;

const post = (endpoint: string, body: string, headers: Record<string, string>) =>
  fetch(`${gateway.url}/webhooks/${endpoint}`, { method: 'POST', body, headers });

const hmacHex = (body: string) => createHmac('sha256', SECRET).update(body).digest('hex');
const now = () => Math.floor(Date.now() / 1000);

describe('unsigned handshakes', () => {
  it('asana: the X-Hook-Secret handshake is echoed; the signed events that follow are stored', async () => {
    const answer = await post('asana', '', { 'x-hook-secret': 'b537207f20cbfa02357cf448134da559' });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('x-hook-secret')).toBe('b537207f20cbfa02357cf448134da559');
    expect(await rows('asana')).toEqual([]);
    const body = JSON.stringify({ events: [{ action: 'added', resource: { gid: '1' } }] });
    const event = await post('asana', body, {
      'x-hook-signature': hmacHex(body),
      'content-type': 'application/json',
    });
    expect(event.status).toBe(200);
    expect(await rows('asana')).toHaveLength(1);
  });

  it('dropbox: GET ?challenge= is echoed as nosniff text; a GET without one is 405', async () => {
    const answer = await fetch(`${gateway.url}/webhooks/dropbox?challenge=Zm9vYmFy123`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await answer.text()).toBe('Zm9vYmFy123');
    expect((await fetch(`${gateway.url}/webhooks/dropbox`)).status).toBe(405);
    expect(await rows('dropbox')).toEqual([]);
  });

  it('okta: the one-time GET verification gets {"verification": …}; other endpoints keep 405 for GET', async () => {
    const answer = await fetch(`${gateway.url}/webhooks/okta`, {
      headers: { 'x-okta-verification-challenge': 'abc-def' },
    });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ verification: 'abc-def' });
    const elsewhere = await fetch(`${gateway.url}/webhooks/zoom`, {
      headers: { 'x-okta-verification-challenge': 'x' },
    });
    expect(elsewhere.status).toBe(405);
  });
});

describe('signed questions', () => {
  it('zoom: endpoint.url_validation is answered with the token and its HMAC, and stored as nothing', async () => {
    const body = JSON.stringify({
      payload: { plainToken: 'pt-123' },
      event_ts: Date.now(),
      event: 'endpoint.url_validation',
    });
    const ts = now();
    const answer = await post('zoom', body, {
      'x-zm-request-timestamp': String(ts),
      'x-zm-signature': `v0=${createHmac('sha256', SECRET).update(`v0:${ts}:${body}`).digest('hex')}`,
    });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({
      plainToken: 'pt-123',
      encryptedToken: createHmac('sha256', SECRET).update('pt-123').digest('hex'),
    });
    expect(await rows('zoom')).toEqual([]);
  });

  it('discord: a signed PING gets an empty 204; an unsigned one a 401', async () => {
    const body = JSON.stringify({ version: 1, application_id: '1', type: 0 });
    const ts = now();
    const signature = sign(null, Buffer.from(`${ts}${body}`), discordKeys.privateKey).toString('hex');
    const answer = await post('discord', body, {
      'x-signature-timestamp': String(ts),
      'x-signature-ed25519': signature,
    });
    expect(answer.status).toBe(204);
    expect(await answer.text()).toBe('');
    const forged = await post('discord', body, {
      'x-signature-timestamp': String(ts),
      'x-signature-ed25519': '00'.repeat(64),
    });
    expect(forged.status).toBe(401);
    expect(await rows('discord')).toEqual([]);
  });

  it('twitch: the callback verification challenge is echoed as text/plain', async () => {
    const body = JSON.stringify({
      challenge: 'twitch-challenge-1',
      subscription: { type: 'channel.follow' },
    });
    const ts = new Date().toISOString();
    const answer = await post('twitch', body, {
      'twitch-eventsub-message-id': 'm-1',
      'twitch-eventsub-message-timestamp': ts,
      'twitch-eventsub-message-type': 'webhook_callback_verification',
      'twitch-eventsub-message-signature': `sha256=${createHmac('sha256', SECRET).update(`m-1${ts}${body}`).digest('hex')}`,
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await answer.text()).toBe('twitch-challenge-1');
    expect(await rows('twitch')).toEqual([]);
  });

  it('xero: intent to receive, 200 for the signed payload and 401 for the wrongly signed one', async () => {
    const body = JSON.stringify({
      events: [],
      firstEventSequence: 0,
      lastEventSequence: 0,
      entropy: 'ABCDEFGHIJ',
    });
    const good = await post('xero', body, {
      'x-xero-signature': createHmac('sha256', SECRET).update(body).digest('base64'),
    });
    expect(good.status).toBe(200);
    // Xero's rules for every answer: no body, no cookies.
    expect(await good.text()).toBe('');
    expect(good.headers.get('content-type')).toBeNull();
    expect(good.headers.get('set-cookie')).toBeNull();
    const bad = await post('xero', body, {
      'x-xero-signature': createHmac('sha256', 'nope').update(body).digest('base64'),
    });
    expect(bad.status).toBe(401);
    expect(await rows('xero')).toEqual([]);
  });

  it('xero: a signed batch of events is stored and acknowledged 200 with no body, its retry too', async () => {
    const body = JSON.stringify({
      events: [{ resourceUrl: 'https://api.xero.com/api.xro/2.0/Invoices/1', eventType: 'UPDATE' }],
      firstEventSequence: 1,
      lastEventSequence: 1,
      entropy: 'KLMNOPQRST',
    });
    const headers = { 'x-xero-signature': createHmac('sha256', SECRET).update(body).digest('base64') };
    for (let i = 0; i < 2; i += 1) {
      const answer = await post('xero', body, headers);
      expect(answer.status).toBe(200);
      expect(await answer.text()).toBe('');
      expect(answer.headers.get('content-length')).toBe('0');
    }
    expect(await rows('xero')).toHaveLength(1);
  });
});

describe('bodies and dedupe keys of the new schemes', () => {
  it('twilio: a signed form post is stored as the JSON of its parameters', async () => {
    const body = 'MessageSid=SM1&MessageStatus=delivered&To=%2B15005550006';
    const signed = Object.entries(Object.fromEntries(new URLSearchParams(body)))
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .reduce((acc, [k, v]) => acc + k + v, TWILIO_URL);
    const answer = await post('twilio', body, {
      'content-type': 'application/x-www-form-urlencoded',
      'x-twilio-signature': createHmac('sha1', SECRET).update(signed).digest('base64'),
      'i-twilio-idempotency-token': 'tok-1',
    });
    expect(answer.status).toBe(200);
    expect(await rows('twilio')).toEqual([
      {
        event_id: 'tok-1',
        event_type: 'delivered',
        payload: { MessageSid: 'SM1', MessageStatus: 'delivered', To: '+15005550006' },
      },
    ]);
  });

  it('mailgun: a replay of a delivery is a duplicate; a signature past the tolerance is refused', async () => {
    const body = (ts: string) => {
      const token = 'b'.repeat(50);
      const signature = createHmac('sha256', SECRET)
        .update(ts + token)
        .digest('hex');
      return JSON.stringify({
        signature: { timestamp: ts, token, signature },
        'event-data': { id: 'mg-1', event: 'delivered' },
      });
    };
    const fresh = body(String(now()));
    expect(await (await post('mailgun', fresh, { 'content-type': 'application/json' })).json()).toMatchObject(
      {
        status: 'accepted',
        event_id: 'mg-1',
      },
    );
    expect(await (await post('mailgun', fresh, { 'content-type': 'application/json' })).json()).toMatchObject(
      {
        status: 'duplicate',
      },
    );
    const stale = await post('mailgun', body(String(now() - 400)), { 'content-type': 'application/json' });
    expect(stale.status).toBe(401);
    expect((await rows('mailgun')).map((row) => row.event_id)).toEqual(['mg-1']);
  });
});
