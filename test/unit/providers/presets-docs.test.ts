import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createProvider } from '../../../services/core/providers/index.ts';
import { NOW_S } from './fixtures.ts';
import { type Headers, prove, verifyRequest, type Which } from './preset-proof.ts';

// These providers publish no library that verifies their webhooks (or none that installs from
// npm), and no example with values: each delivery here is signed by the formula on the page
// named in the preset's evidence (services/core/providers/presets.ts), computed in this file
// independently of hookgate's code. That is a computation from the docs, and is stated so in
// docs/providers.md.

const mac = (algorithm: string, key: string, ...parts: string[]) => {
  const h = createHmac(algorithm, key);
  for (const part of parts) h.update(part);
  return h;
};
const pick = <T>(which: Which, values: Readonly<Record<Which, T>>): T => values[which];
const secrets = { good: 'the-secret-they-gave-us', other: 'somebody-elses-secret' };

prove('gitlab (shared token, computed from the docs)', {
  provider: 'gitlab',
  tokenOnly: true,
  secrets,
  body: JSON.stringify({ object_kind: 'merge_request', object_attributes: { id: 99, action: 'open' } }),
  sign: (_body, which) => ({
    'X-Gitlab-Token': pick(which, secrets),
    'X-Gitlab-Event': 'Merge Request Hook',
    'X-Gitlab-Event-UUID': 'evt-uuid-1',
    'Idempotency-Key': 'idem-key-1',
  }),
  identity: { eventId: 'idem-key-1', eventType: 'merge_request.open', idUnsigned: true },
});

prove('bitbucket (X-Hub-Signature sha256=hex, computed from the docs)', {
  provider: 'bitbucket',
  secrets,
  body: JSON.stringify({ repository: { full_name: 'team/repo' }, push: { changes: [] } }),
  sign: (body, which) => ({
    'X-Hub-Signature': `sha256=${mac('sha256', pick(which, secrets), body).digest('hex')}`,
    'X-Request-UUID': 'req-uuid-1',
    'X-Event-Key': 'repo:push',
  }),
  identity: { eventId: 'req-uuid-1', eventType: 'repo:push', idUnsigned: true },
});

prove('woocommerce (base64 HMAC-SHA256 of the body, computed from the docs)', {
  provider: 'woocommerce',
  secrets,
  body: JSON.stringify({ id: 727, status: 'processing', date_modified_gmt: '2024-04-12T10:18:49' }),
  sign: (body, which) => ({
    'X-WC-Webhook-Signature': mac('sha256', pick(which, secrets), body).digest('base64'),
    'X-WC-Webhook-Delivery-ID': '4521',
    'X-WC-Webhook-Topic': 'order.updated',
  }),
  identity: { eventId: '4521', eventType: 'order.updated', idUnsigned: true },
});

prove('typeform (Typeform-Signature sha256=base64, computed from the docs)', {
  provider: 'typeform',
  secrets,
  body: JSON.stringify({ event_id: '01HV3', event_type: 'form_response', form_response: { form_id: 'f1' } }),
  sign: (body, which) => ({
    'Typeform-Signature': `sha256=${mac('sha256', pick(which, secrets), body).digest('base64')}`,
  }),
  identity: { eventId: '01HV3', eventType: 'form_response', idUnsigned: false },
});

prove('sentry (Sentry-Hook-Signature hex, computed from the docs)', {
  provider: 'sentry',
  secrets,
  body: JSON.stringify({ action: 'created', data: { issue: { id: '1' } }, installation: { uuid: 'u' } }),
  sign: (body, which) => ({
    'Sentry-Hook-Signature': mac('sha256', pick(which, secrets), body).digest('hex'),
    'Sentry-Hook-Resource': 'issue',
    'Request-ID': 'req-1',
  }),
  identity: { eventId: 'req-1', eventType: 'issue.created', idUnsigned: true },
});

prove('pagerduty (v1= list, any entry may match, computed from the docs)', {
  provider: 'pagerduty',
  secrets,
  body: JSON.stringify({
    event: {
      id: '01DEN1HNALIHXWDYDUIIHGAKCZ',
      event_type: 'incident.triggered',
      resource_type: 'incident',
      data: { id: 'PGR0VU2', type: 'incident' },
    },
  }),
  // Two entries while PagerDuty rotates: one stale, one current.
  sign: (body, which) => ({
    'X-PagerDuty-Signature': `v1=${mac('sha256', 'a-retired-secret', body).digest('hex')},v1=${mac('sha256', pick(which, secrets), body).digest('hex')}`,
  }),
  identity: {
    eventId: '01DEN1HNALIHXWDYDUIIHGAKCZ',
    eventType: 'incident.triggered',
    entityType: 'incident',
    entityId: 'PGR0VU2',
  },
});

prove('intercom (X-Hub-Signature sha1=hex, computed from the docs)', {
  provider: 'intercom',
  secrets,
  body: JSON.stringify({
    type: 'notification_event',
    id: 'notif_1',
    topic: 'conversation.user.created',
    data: { item: { type: 'conversation', id: '123', updated_at: 1_700_000_000 } },
  }),
  sign: (body, which) => ({
    'X-Hub-Signature': `sha1=${mac('sha1', pick(which, secrets), body).digest('hex')}`,
  }),
  identity: {
    eventId: 'notif_1',
    eventType: 'conversation.user.created',
    entityType: 'conversation',
    entityId: '123',
    entityVersion: '1700000000',
  },
});

prove('calendly (t=…,v1=… over "t.body", computed from the docs)', {
  provider: 'calendly',
  secrets,
  timestamp: 'seconds',
  body: JSON.stringify({
    event: 'invitee.created',
    created_at: '2024-04-12T10:18:49Z',
    payload: { uri: 'x' },
  }),
  sign: (body, which, t) => ({
    'Calendly-Webhook-Signature': `t=${t},v1=${mac('sha256', pick(which, secrets), `${t}.`, body).digest('hex')}`,
  }),
  identity: { eventId: expect.stringMatching(/^sha256:/), eventType: 'invitee.created' },
});

prove('postmark (basic auth user:password, computed from the docs)', {
  provider: 'postmark',
  tokenOnly: true,
  secrets: { good: 'hookgate:correct horse', other: 'hookgate:battery staple' },
  body: JSON.stringify({ RecordType: 'Delivery', MessageID: 'm-1', Recipient: 'a@example.com' }),
  sign: (_body, which) => ({
    Authorization: `Basic ${Buffer.from(which === 'good' ? 'hookgate:correct horse' : 'hookgate:battery staple').toString('base64')}`,
  }),
  identity: { eventId: expect.stringMatching(/^sha256:/), eventType: 'Delivery' },
});

prove('vercel (x-vercel-signature hex HMAC-SHA1, computed from the docs)', {
  provider: 'vercel',
  secrets,
  body: JSON.stringify({ id: 'evt_vercel_1', type: 'deployment.succeeded', payload: {} }),
  sign: (body, which) => ({ 'x-vercel-signature': mac('sha1', pick(which, secrets), body).digest('hex') }),
  identity: { eventId: 'evt_vercel_1', eventType: 'deployment.succeeded' },
});

prove('zendesk (base64 HMAC of timestamp + body, RFC 3339 timestamp, computed from the docs)', {
  provider: 'zendesk',
  secrets,
  timestamp: 'seconds',
  body: JSON.stringify({ type: 'zen:event-type:ticket.created', id: 'z1', detail: { id: '35436' } }),
  sign: (body, which, t) => {
    const timestamp = new Date(t * 1000).toISOString().replace('.000Z', 'Z');
    return {
      'X-Zendesk-Webhook-Signature': mac('sha256', pick(which, secrets), timestamp, body).digest('base64'),
      'X-Zendesk-Webhook-Signature-Timestamp': timestamp,
      'X-Zendesk-Webhook-Invocation-Id': '8350205582',
    };
  },
  identity: { eventId: '8350205582', eventType: 'zen:event-type:ticket.created', idUnsigned: true },
});

prove('zoom (v0= hex over "v0:ts:body", computed from the docs)', {
  provider: 'zoom',
  secrets,
  timestamp: 'seconds',
  body: JSON.stringify({
    event: 'meeting.started',
    event_ts: 1_700_000_000_123,
    payload: { object: { id: '1' } },
  }),
  sign: (body, which, t) => ({
    'x-zm-request-timestamp': String(t),
    'x-zm-signature': `v0=${mac('sha256', pick(which, secrets), `v0:${t}:`, body).digest('hex')}`,
  }),
  identity: { eventId: expect.stringMatching(/^sha256:/), eventType: 'meeting.started' },
});

const twitchBody = JSON.stringify({
  subscription: { id: 's1', type: 'channel.follow', version: '2', status: 'enabled' },
  event: { user_id: '1337', broadcaster_user_id: '42' },
});
const twitchSign = (body: string, which: Which, t: number): Headers => {
  const timestamp = new Date(t * 1000).toISOString().replace('Z', '123456Z');
  return {
    'Twitch-Eventsub-Message-Id': 'befa7b53-d79d-478f-86b9-120f112b044e',
    'Twitch-Eventsub-Message-Timestamp': timestamp,
    'Twitch-Eventsub-Message-Type': 'notification',
    'Twitch-Eventsub-Message-Signature': `sha256=${mac('sha256', pick(which, secrets), 'befa7b53-d79d-478f-86b9-120f112b044e', timestamp, body).digest('hex')}`,
  };
};
prove('twitch (sha256= hex over id + timestamp + body, computed from the docs)', {
  provider: 'twitch',
  secrets,
  timestamp: 'seconds',
  body: twitchBody,
  sign: twitchSign,
  identity: {
    eventId: 'befa7b53-d79d-478f-86b9-120f112b044e',
    eventType: 'channel.follow',
    idUnsigned: false,
  },
});

prove('asana (X-Hook-Signature hex, computed from the docs)', {
  provider: 'asana',
  secrets,
  body: JSON.stringify({ events: [{ action: 'changed', resource: { gid: '1', resource_type: 'task' } }] }),
  sign: (body, which) => ({ 'X-Hook-Signature': mac('sha256', pick(which, secrets), body).digest('hex') }),
  identity: { eventId: expect.stringMatching(/^sha256:/), eventType: 'events' },
});

prove('dropbox (X-Dropbox-Signature hex, computed from the docs)', {
  provider: 'dropbox',
  secrets,
  body: JSON.stringify({ list_folder: { accounts: ['dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc'] } }),
  sign: (body, which) => ({ 'X-Dropbox-Signature': mac('sha256', pick(which, secrets), body).digest('hex') }),
  identity: { eventId: expect.stringMatching(/^sha256:/), eventType: 'list_folder' },
});

prove('xero (x-xero-signature base64, computed from the docs)', {
  provider: 'xero',
  secrets,
  body: JSON.stringify({
    events: [{ resourceId: 'r1', eventCategory: 'INVOICE', eventType: 'UPDATE', tenantId: 't1' }],
    firstEventSequence: 1,
    lastEventSequence: 1,
    entropy: 'S0m3r4Nd0mt3xt',
  }),
  sign: (body, which) => ({ 'x-xero-signature': mac('sha256', pick(which, secrets), body).digest('base64') }),
  identity: { eventId: expect.stringMatching(/^sha256:/), eventType: 'events' },
});

prove('okta (the configured Authorization value, computed from the docs)', {
  provider: 'okta',
  tokenOnly: true,
  secrets,
  body: JSON.stringify({
    eventType: 'com.okta.event_hook',
    eventId: 'b5a188b9-5ece-4636-b041-482ffda96311',
    data: { events: [{ eventType: 'user.session.start' }] },
  }),
  sign: (_body, which) => ({ Authorization: pick(which, secrets) }),
  identity: { eventId: 'b5a188b9-5ece-4636-b041-482ffda96311', eventType: 'com.okta.event_hook' },
});

// Mailgun signs a timestamp and a token carried in the body, not the body itself.
const mailgunBody = (which: Which, t: number, eventData = { id: 'mg-evt-1', event: 'delivered' }) => {
  const token = 'a8ce0edb2dd8301dee6c2405235584e45aa91d1e9f979f3de0';
  return JSON.stringify({
    signature: {
      timestamp: String(t),
      token,
      signature: mac('sha256', pick(which, secrets), String(t), token).digest('hex'),
    },
    'event-data': eventData,
  });
};
describe('mailgun (hex HMAC of timestamp + token, computed from the docs)', () => {
  const provider = createProvider({ provider: 'mailgun' });
  const verdict = (body: string, keys: string[], nowMs?: number) => {
    const result = provider.verify(verifyRequest(body, {}, keys, nowMs));
    return result.ok ? 'ok' : result.code;
  };

  it('accepts its signature, refuses a wrong key, accepts it once configured (rotation)', () => {
    expect(verdict(mailgunBody('good', NOW_S), [secrets.good])).toBe('ok');
    expect(verdict(mailgunBody('other', NOW_S), [secrets.good])).toBe('signature_invalid');
    expect(verdict(mailgunBody('other', NOW_S), [secrets.good, secrets.other])).toBe('ok');
  });

  it('refuses a body without the signature object, and a stale or early timestamp', () => {
    expect(verdict('{"event-data":{}}', [secrets.good])).toBe('signature_missing');
    expect(verdict(mailgunBody('good', NOW_S - 301), [secrets.good])).toBe('timestamp_out_of_tolerance');
    expect(verdict(mailgunBody('good', NOW_S + 301), [secrets.good])).toBe('timestamp_out_of_tolerance');
    expect(verdict(mailgunBody('good', NOW_S - 300), [secrets.good])).toBe('ok');
  });

  it('keys the event by its event-data id, unsigned (nothing in the body is signed)', () => {
    const body = mailgunBody('good', NOW_S);
    const identity = provider.identify({ headers: {}, body: JSON.parse(body), rawBody: Buffer.from(body) });
    expect(identity).toMatchObject({
      ok: true,
      event: { eventId: 'mg-evt-1', eventType: 'delivered', idUnsigned: true },
    });
    // Even an id read elsewhere by extract: is unsigned here.
    const overridden = createProvider({ provider: 'mailgun', extract: { eventId: '/signature/token' } });
    expect(overridden.identify({ headers: {}, body: JSON.parse(body) })).toMatchObject({
      event: { idUnsigned: true },
    });
  });
});
