import { describe, expect, it } from 'vitest';
import {
  envelopeTraceparent,
  outboxEnvelope,
  readOutboxEnvelope,
} from '../../services/core/outbox/message.ts';

const TRACE = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

describe('the outbox envelope', () => {
  it('is read back as it was built, version and trace context included', () => {
    const built = outboxEnvelope({
      kind: 'forward',
      key: 'pay:evt_1',
      endpoint: 'pay',
      eventId: 'evt_1',
      payload: { url: 'https://example.com/hook', body: { a: 1 } },
      traceparent: TRACE,
    });
    expect(built).toEqual({
      v: 1,
      kind: 'forward',
      key: 'pay:evt_1',
      endpoint: 'pay',
      eventId: 'evt_1',
      payload: { url: 'https://example.com/hook', body: { a: 1 } },
      traceparent: TRACE,
    });
    // As pg-boss stores and returns it: JSON.
    const stored = JSON.parse(JSON.stringify(built)) as unknown;
    expect(readOutboxEnvelope(stored)).toEqual({
      ok: true,
      message: {
        key: 'pay:evt_1',
        endpoint: 'pay',
        eventId: 'evt_1',
        payload: { url: 'https://example.com/hook', body: { a: 1 } },
        traceparent: TRACE,
      },
    });
    expect(envelopeTraceparent(stored)).toBe(TRACE);
  });

  it('leaves the trace context out when there is none', () => {
    const built = outboxEnvelope({
      kind: 'notify',
      key: 'k',
      endpoint: 'e',
      eventId: 'i',
      payload: {},
      traceparent: null,
    });
    expect('traceparent' in built).toBe(false);
    expect(envelopeTraceparent(built)).toBeNull();
  });

  it("still reads the previous version's envelope (no v), whose endpoint and event id may be missing", () => {
    expect(readOutboxEnvelope({ kind: 'notify', key: 'inv_1:paid', payload: { url: null } })).toEqual({
      ok: true,
      message: {
        key: 'inv_1:paid',
        endpoint: undefined,
        eventId: undefined,
        payload: { url: null },
        traceparent: undefined,
      },
    });
  });

  it('refuses what is neither, saying where', () => {
    expect(
      readOutboxEnvelope({ v: 2, kind: 'forward', key: 'k', endpoint: 'e', eventId: 'i', payload: {} }),
    ).toMatchObject({
      ok: false,
      error: expect.stringMatching(/^outbox envelope is malformed at \/v: /),
    });
    expect(readOutboxEnvelope({ v: 1, kind: 'forward', key: 'k', eventId: 'i', payload: {} })).toMatchObject({
      ok: false,
      error: expect.stringMatching(/at \/endpoint/),
    });
    expect(readOutboxEnvelope({ kind: 'notify', payload: {} })).toMatchObject({
      ok: false,
      error: expect.stringMatching(/at \/key/),
    });
    expect(readOutboxEnvelope(null)).toMatchObject({ ok: false });
    expect(readOutboxEnvelope('text')).toMatchObject({ ok: false });
  });
});
