import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { hmacOptionsSchema } from '../../../services/core/providers/hmac-options.ts';
import { createProvider } from '../../../services/core/providers/index.ts';
import { identify, request, reserialised, tampered, verdictOf } from './fixtures.ts';

const SECRET = 'shared-secret';
const BODY = JSON.stringify({ id: 'ord_1', kind: 'order.paid', order: { id: 991, revision: 3 } });

const sha256Hex = createProvider({
  provider: 'hmac',
  hmac: hmacOptionsSchema.parse({ header: 'X-Signature', prefix: 'sha256=', eventIdHeader: 'X-Event-Id' }),
});

function sign(
  body: string,
  secret = SECRET,
  algorithm = 'sha256',
  encoding: 'hex' | 'base64' = 'hex',
): string {
  return createHmac(algorithm, secret).update(body).digest(encoding);
}

describe('hmac verify', () => {
  it('accepts a prefixed hex SHA-256 signature', () => {
    expect(verdictOf(sha256Hex, request(BODY, { 'X-Signature': `sha256=${sign(BODY)}` }, [SECRET]))).toBe(
      'ok',
    );
  });

  it('accepts an unprefixed base64 SHA-512 signature when so configured', () => {
    const sha512 = createProvider({
      provider: 'hmac',
      hmac: hmacOptionsSchema.parse({ header: 'X-Sig', algorithm: 'sha512', encoding: 'base64' }),
    });
    const value = sign(BODY, SECRET, 'sha512', 'base64');
    expect(verdictOf(sha512, request(BODY, { 'X-Sig': value }, [SECRET]))).toBe('ok');
    expect(
      verdictOf(sha512, request(BODY, { 'X-Sig': sign(BODY, SECRET, 'sha256', 'base64') }, [SECRET])),
    ).toBe('signature_invalid');
  });

  it('refuses tampered, re-serialised and wrongly keyed deliveries', () => {
    const value = `sha256=${sign(BODY)}`;
    expect(verdictOf(sha256Hex, request(tampered(BODY), { 'X-Signature': value }, [SECRET]))).toBe(
      'signature_invalid',
    );
    expect(verdictOf(sha256Hex, request(reserialised(BODY), { 'X-Signature': value }, [SECRET]))).toBe(
      'signature_invalid',
    );
    expect(
      verdictOf(sha256Hex, request(BODY, { 'X-Signature': `sha256=${sign(BODY, 'x')}` }, [SECRET])),
    ).toBe('signature_invalid');
  });

  it('reports a missing header and refuses a missing prefix or bad encoding', () => {
    expect(verdictOf(sha256Hex, request(BODY, {}, [SECRET]))).toBe('signature_missing');
    expect(verdictOf(sha256Hex, request(BODY, { 'X-Signature': sign(BODY) }, [SECRET]))).toBe(
      'signature_invalid',
    );
    expect(
      verdictOf(
        sha256Hex,
        request(BODY, { 'X-Signature': `sha256=${sign(BODY, SECRET, 'sha256', 'base64')}` }, [SECRET]),
      ),
    ).toBe('signature_invalid');
  });

  it('accepts a delivery signed with a previous secret among several configured', () => {
    expect(
      verdictOf(sha256Hex, request(BODY, { 'X-Signature': `sha256=${sign(BODY, 'old')}` }, [SECRET, 'old'])),
    ).toBe('ok');
  });
});

describe('hmac identify', () => {
  it('takes the id from the configured header and defaults the type to unknown, storing no signature', () => {
    const h = { 'X-Signature': `sha256=${sign(BODY)}`, 'X-Event-Id': 'del-1' };
    expect(identify(sha256Hex, request(BODY, h, [SECRET]))).toEqual({
      ok: true,
      event: {
        eventId: 'del-1',
        eventType: 'unknown',
        entityType: null,
        entityId: null,
        entityVersion: null,
        headers: {},
        // X-Event-Id is outside the signed content: the body digest is deduplicated too.
        idUnsigned: true,
      },
    });
  });

  it('reads id, type, entity and version through pointers, and keeps the type header', () => {
    const provider = createProvider({
      provider: 'hmac',
      hmac: hmacOptionsSchema.parse({ header: 'X-Signature', eventTypeHeader: 'X-Event-Type' }),
      extract: { eventId: '/id', entityType: '/kind', entityId: '/order/id', version: '/order/revision' },
    });
    const h = { 'X-Signature': sign(BODY), 'X-Event-Type': 'order.paid' };
    expect(identify(provider, request(BODY, h, [SECRET]))).toEqual({
      ok: true,
      event: {
        eventId: 'ord_1',
        eventType: 'order.paid',
        entityType: 'order.paid',
        entityId: '991',
        entityVersion: '3',
        headers: { 'x-event-type': 'order.paid' },
        idUnsigned: false,
      },
    });
  });

  it('uses the type pointer when no type header is configured', () => {
    const provider = createProvider({
      provider: 'hmac',
      hmac: hmacOptionsSchema.parse({ header: 'X-Signature' }),
      extract: { eventId: '/id', eventType: '/kind' },
    });
    expect(identify(provider, request(BODY, { 'X-Signature': sign(BODY) }, [SECRET]))).toMatchObject({
      ok: true,
      event: { eventType: 'order.paid' },
    });
  });

  it('refuses a delivery whose id header is absent and no pointer is configured', () => {
    expect(
      identify(sha256Hex, request(BODY, { 'X-Signature': `sha256=${sign(BODY)}` }, [SECRET])),
    ).toMatchObject({
      ok: false,
      code: 'event_id_missing',
    });
  });

  it('never keeps the signature header, even if named as the type header', () => {
    const provider = createProvider({
      provider: 'hmac',
      hmac: hmacOptionsSchema.parse({ header: 'X-Auth', eventTypeHeader: 'X-Auth' }),
      extract: { eventId: '/id' },
    });
    const result = identify(provider, request(BODY, { 'X-Auth': sign(BODY) }, [SECRET]));
    expect(result.ok && 'event' in result ? result.event.headers : 'not identified').toEqual({});
  });
});

describe('hmac identify without its configured type', () => {
  it('refuses as event_type_missing (quarantined by the gateway) when the configured type header or pointer is absent', () => {
    const byHeader = createProvider({
      provider: 'hmac',
      hmac: hmacOptionsSchema.parse({ header: 'X-Signature', eventTypeHeader: 'X-Event-Type' }),
      extract: { eventId: '/id' },
    });
    expect(identify(byHeader, request(BODY, { 'X-Signature': sign(BODY) }, [SECRET]))).toMatchObject({
      ok: false,
      code: 'event_type_missing',
    });
    const byPointer = createProvider({
      provider: 'hmac',
      hmac: hmacOptionsSchema.parse({ header: 'X-Signature' }),
      extract: { eventId: '/id', eventType: '/type' },
    });
    expect(identify(byPointer, request(BODY, { 'X-Signature': sign(BODY) }, [SECRET]))).toMatchObject({
      ok: false,
      code: 'event_type_missing',
    });
    // With the header present, the type is read as before.
    expect(
      identify(
        byHeader,
        request(BODY, { 'X-Signature': sign(BODY), 'X-Event-Type': 'order.paid' }, [SECRET]),
      ),
    ).toMatchObject({ ok: true, event: { eventType: 'order.paid' } });
  });
});
