// First: tracing starts before the gateway's modules (http, express, pg) load.

import { createHmac } from 'node:crypto';
import { SpanKind } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { type FakeDownstream, startFakeDownstream } from '../support/fake-downstream.ts';
import { type ObservedHookgate, startObservedHookgate } from '../support/observability.ts';
import { exporter, tracing } from '../support/tracing-first.ts';
import { waitFor, workerConfig } from '../support/worker-harness.ts';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const XERO_KEY = 'xero-webhook-key-for-tracing';

let db: TestDatabase;
let hookgate: ObservedHookgate;
let downstream: FakeDownstream;

beforeAll(async () => {
  db = await createTestDatabase();
  downstream = await startFakeDownstream();
  hookgate = await startObservedHookgate(
    db.url,
    workerConfig({
      traced: { handler: 'record', destinations: { hook: { url: `${downstream.url}/hook` } } },
      direct: { handler: 'record', mode: 'sync' },
      xero: { provider: 'xero', secrets: [XERO_KEY], handler: 'record' },
    }),
  );
});

afterAll(async () => {
  await hookgate?.stop();
  await downstream?.close();
  await db?.drop();
  await tracing?.shutdown();
});

const attribute = (span: ReadableSpan, key: string) => span.attributes[`hookgate.${key}`];
const named = (name: string, eventId: string) =>
  exporter.getFinishedSpans().filter((s) => s.name === name && attribute(s, 'event_id') === eventId);
/** How many finished spans of each name an event has: a failure names the span that is missing. */
const spanCounts = (names: readonly string[], eventId: string) =>
  Object.fromEntries(names.map((name) => [name, named(name, eventId).length]));

describe('traces', () => {
  it("join the gateway's claim span, the worker's apply span and the destination's delivery in one trace", async () => {
    const delivery = standardWebhook(SECRET, { eventId: 'evt_traced' });
    // The provider's own trace context: the whole chain continues it.
    const providerTrace = '0af7651916cd43dd8448eb211c80319c';
    const reply = await post(`${hookgate.url}/webhooks/traced`, {
      body: delivery.body,
      headers: { ...delivery.headers, traceparent: `00-${providerTrace}-b7ad6b7169203331-01` },
    });
    expect(reply.status).toBe(200);
    await downstream.waitFor('/hook', 1);
    await waitFor('delivery span', async () => named('webhook.deliver', 'evt_traced').length === 1);

    const [claim] = named('webhook.claim', 'evt_traced');
    const [apply] = named('webhook.apply', 'evt_traced');
    const [deliver] = named('webhook.deliver', 'evt_traced');
    expect(spanCounts(['webhook.claim', 'webhook.apply', 'webhook.deliver'], 'evt_traced')).toEqual({
      'webhook.claim': 1,
      'webhook.apply': 1,
      'webhook.deliver': 1,
    });
    expect(attribute(claim!, 'endpoint')).toBe('traced');
    expect(attribute(claim!, 'outcome')).toBe('accepted');
    expect(attribute(apply!, 'outcome')).toBe('applied');
    expect(attribute(deliver!, 'outcome')).toBe('delivered');
    expect(attribute(deliver!, 'destination')).toBe('hook');
    expect(attribute(deliver!, 'attempt')).toBe(1);

    // One trace: the provider's; apply and the delivery are children of claim (across the inbox
    // row, whose traceparent the delivery's claim reads back).
    expect(claim!.spanContext().traceId).toBe(providerTrace);
    expect(apply!.spanContext().traceId).toBe(providerTrace);
    expect(deliver!.spanContext().traceId).toBe(providerTrace);
    expect(apply!.parentSpanContext?.spanId).toBe(claim!.spanContext().spanId);
    expect(deliver!.parentSpanContext?.spanId).toBe(claim!.spanContext().spanId);

    // The HTTP server span continues the provider's context and names the route, on the
    // gateway's one webhook path (the same code runs untraced).
    const servers = exporter
      .getFinishedSpans()
      .filter((s) => s.kind === SpanKind.SERVER && s.spanContext().traceId === providerTrace);
    expect(servers.map((s) => [s.name, s.attributes['http.route']])).toEqual([
      ['POST /webhooks/:endpoint', '/webhooks/:endpoint'],
    ]);
    expect(servers[0]!.parentSpanContext?.spanId).toBe('b7ad6b7169203331');
    expect(claim!.parentSpanContext?.spanId).toBe(servers[0]!.spanContext().spanId);

    // What the inbox row stores is the claim span's own traceparent.
    const row = await db.pool.query<{ traceparent: string }>(
      `SELECT traceparent FROM hookgate.inbox WHERE endpoint = 'traced' AND event_id = 'evt_traced'`,
    );
    expect(row.rows[0]!.traceparent).toBe(`00-${providerTrace}-${claim!.spanContext().spanId}-01`);

    // Verification has its span too, in the same trace, and failures say why.
    const verify = exporter
      .getFinishedSpans()
      .filter((s) => s.name === 'webhook.verify' && s.spanContext().traceId === providerTrace);
    expect(verify.map((s) => attribute(s, 'outcome'))).toEqual(['verified']);
    const forged = standardWebhook('whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD', { eventId: 'evt_forged' });
    expect((await post(`${hookgate.url}/webhooks/traced`, forged)).status).toBe(401);
    await waitFor('verify span for the forged delivery', async () =>
      exporter
        .getFinishedSpans()
        .some((s) => s.name === 'webhook.verify' && attribute(s, 'outcome') === 'signature_invalid'),
    );
  });

  it('sync mode records what the worker records: the apply span under the claim, the apply metrics', async () => {
    const delivery = standardWebhook(SECRET, { eventId: 'evt_sync_traced' });
    const reply = await post(`${hookgate.url}/webhooks/direct`, delivery);
    expect(reply.status).toBe(200);
    // Applied before the answer: the row is settled and the spans are finished.
    const row = await db.pool.query<{ status: string; attempts: number }>(
      `SELECT status, attempts FROM hookgate.inbox WHERE endpoint = 'direct' AND event_id = 'evt_sync_traced'`,
    );
    expect(row.rows).toEqual([{ status: 'processed', attempts: 1 }]);
    await waitFor('the sync apply span', async () => named('webhook.apply', 'evt_sync_traced').length === 1);
    const [claim] = named('webhook.claim', 'evt_sync_traced');
    const [apply] = named('webhook.apply', 'evt_sync_traced');
    expect(spanCounts(['webhook.claim', 'webhook.apply'], 'evt_sync_traced')).toEqual({
      'webhook.claim': 1,
      'webhook.apply': 1,
    });
    expect(attribute(apply!, 'outcome')).toBe('applied');
    expect(attribute(apply!, 'attempt')).toBe(1);
    expect(apply!.spanContext().traceId).toBe(claim!.spanContext().traceId);

    const text = await hookgate.scrape();
    const value = (pattern: RegExp) => Number(pattern.exec(text)?.[1] ?? Number.NaN);
    expect(
      value(/^hookgate_events_applied_total\{[^}]*endpoint="direct"[^}]*outcome="applied"[^}]*\} (\S+)$/m),
    ).toBe(1);
    expect(value(/^hookgate_apply_duration_seconds_count\{endpoint="direct"\} (\S+)$/m)).toBe(1);
    expect(value(/^hookgate_end_to_end_seconds_count\{endpoint="direct"\} (\S+)$/m)).toBe(1);
  });

  it("keeps what a provider does besides verifying when verify is traced (Xero's empty answer)", async () => {
    const body = JSON.stringify({
      events: [{ eventType: 'UPDATE' }],
      firstEventSequence: 1,
      lastEventSequence: 1,
    });
    const answer = await post(`${hookgate.url}/webhooks/xero`, {
      body,
      headers: { 'x-xero-signature': createHmac('sha256', XERO_KEY).update(body).digest('base64') },
    });
    expect(answer.status).toBe(200);
    expect(answer.headers['content-length']).toBe('0');
    expect(answer.json).toEqual({ raw: '' });
    const verified = exporter
      .getFinishedSpans()
      .filter((s) => s.name === 'webhook.verify' && attribute(s, 'endpoint') === 'xero');
    expect(verified.map((s) => attribute(s, 'outcome'))).toEqual(['verified']);
  });
});
