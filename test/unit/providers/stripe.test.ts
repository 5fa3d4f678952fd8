import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { createProvider } from '../../../services/core/providers/index.ts';
import { identify, NOW_MS, NOW_S, request, reserialised, tampered, verdictOf } from './fixtures.ts';

const stripe = new Stripe('sk_test_x');
const SECRET = 'whsec_test_current';
const OLD_SECRET = 'whsec_test_previous';
const OTHER_SECRET = 'whsec_test_someone_else';
const BODY = JSON.stringify({
  id: 'evt_1PXyZ2AbCdEf',
  object: 'event',
  type: 'invoice.paid',
  created: 1712917129,
  data: { object: { id: 'in_1PXyZ2', object: 'invoice', amount_paid: 4200 } },
});

const provider = createProvider({ provider: 'stripe' });

function header(body: string, secret = SECRET, timestamp = NOW_S): string {
  return stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp });
}

function v1Of(value: string): string {
  return value.split(',').find((item) => item.startsWith('v1=')) ?? '';
}

/** What the SDK verifier says, with the same fixed clock and tolerance as ours. */
function sdkAccepts(body: string, value: string, secret: string): boolean {
  try {
    stripe.webhooks.constructEvent(body, value, secret, 300, undefined, NOW_MS);
    return true;
  } catch {
    return false;
  }
}

describe('stripe verify', () => {
  it('refuses a space after the comma and upper-case hex, as the SDK does', () => {
    const value = header(BODY);
    for (const variant of [
      value.replace(',', ', '),
      value.replace(/v1=([0-9a-f]+)/, (_m, hex: string) => `v1=${hex.toUpperCase()}`),
    ]) {
      expect(sdkAccepts(BODY, variant, SECRET)).toBe(false);
      expect(verdictOf(provider, request(BODY, { 'Stripe-Signature': variant }, [SECRET]))).toBe(
        'signature_invalid',
      );
    }
  });

  it('accepts a header from the SDK test helper, as does the SDK verifier', () => {
    const value = header(BODY);
    expect(verdictOf(provider, request(BODY, { 'Stripe-Signature': value }, [SECRET]))).toBe('ok');
    expect(sdkAccepts(BODY, value, SECRET)).toBe(true);
  });

  it('agrees with the SDK verifier on what it refuses', () => {
    const cases: [string, string][] = [
      [tampered(BODY), header(BODY)],
      [reserialised(BODY), header(BODY)],
      [BODY, header(BODY, OTHER_SECRET)],
      [BODY, header(BODY, SECRET, NOW_S - 301)],
    ];
    for (const [body, value] of cases) {
      expect(sdkAccepts(body, value, SECRET)).toBe(false);
      expect(verdictOf(provider, request(body, { 'Stripe-Signature': value }, [SECRET]))).not.toBe('ok');
    }
  });

  it('uses the whsec_ secret verbatim as the key, not base64-decoded', () => {
    const value = header(BODY);
    const base64Secret = `whsec_${Buffer.from('x').toString('base64')}`;
    expect(
      verdictOf(provider, request(BODY, { 'Stripe-Signature': header(BODY, base64Secret) }, [base64Secret])),
    ).toBe('ok');
    expect(verdictOf(provider, request(BODY, { 'Stripe-Signature': value }, [SECRET.slice(6)]))).toBe(
      'signature_invalid',
    );
  });

  it('refuses a tampered body', () => {
    expect(verdictOf(provider, request(tampered(BODY), { 'Stripe-Signature': header(BODY) }, [SECRET]))).toBe(
      'signature_invalid',
    );
  });

  it('refuses the same JSON re-serialised with other whitespace', () => {
    expect(
      verdictOf(provider, request(reserialised(BODY), { 'Stripe-Signature': header(BODY) }, [SECRET])),
    ).toBe('signature_invalid');
  });

  it('refuses a signature made with another secret', () => {
    expect(
      verdictOf(provider, request(BODY, { 'Stripe-Signature': header(BODY, OTHER_SECRET) }, [SECRET])),
    ).toBe('signature_invalid');
  });

  it('refuses a timestamp too old and, unlike the SDK, one too new', () => {
    const tooOld = header(BODY, SECRET, NOW_S - 301);
    const tooNew = header(BODY, SECRET, NOW_S + 301);
    expect(verdictOf(provider, request(BODY, { 'Stripe-Signature': tooOld }, [SECRET]))).toBe(
      'timestamp_out_of_tolerance',
    );
    expect(verdictOf(provider, request(BODY, { 'Stripe-Signature': tooNew }, [SECRET]))).toBe(
      'timestamp_out_of_tolerance',
    );
    expect(sdkAccepts(BODY, tooNew, SECRET)).toBe(true);
    expect(
      verdictOf(provider, request(BODY, { 'Stripe-Signature': header(BODY, SECRET, NOW_S - 300) }, [SECRET])),
    ).toBe('ok');
  });

  it('refuses a changed timestamp, since the timestamp is signed', () => {
    const value = header(BODY).replace(`t=${NOW_S}`, `t=${NOW_S + 1}`);
    expect(verdictOf(provider, request(BODY, { 'Stripe-Signature': value }, [SECRET]))).toBe(
      'signature_invalid',
    );
  });

  it('reports a missing header and a header without timestamp', () => {
    expect(verdictOf(provider, request(BODY, {}, [SECRET]))).toBe('signature_missing');
    expect(verdictOf(provider, request(BODY, { 'Stripe-Signature': v1Of(header(BODY)) }, [SECRET]))).toBe(
      'timestamp_missing',
    );
  });

  it('refuses malformed headers', () => {
    const good = v1Of(header(BODY));
    const check = (value: string) =>
      verdictOf(provider, request(BODY, { 'Stripe-Signature': value }, [SECRET]));
    expect(check(`t=abc,${good}`)).toBe('timestamp_invalid');
    expect(check(`t=${NOW_S},t=${NOW_S},${good}`)).toBe('timestamp_invalid');
    expect(check(`t=${NOW_S}`)).toBe('signature_invalid');
    expect(check(`t=${NOW_S},v1=zz${good.slice(5)}`)).toBe('signature_invalid');
    expect(check('garbage')).toBe('timestamp_missing');
  });

  it('ignores v0 signatures, even a matching-looking one', () => {
    const hex = v1Of(header(BODY)).slice(3);
    expect(verdictOf(provider, request(BODY, { 'Stripe-Signature': `t=${NOW_S},v0=${hex}` }, [SECRET]))).toBe(
      'signature_invalid',
    );
  });

  it('accepts a delivery signed with a previous secret among several configured', () => {
    expect(
      verdictOf(
        provider,
        request(BODY, { 'Stripe-Signature': header(BODY, OLD_SECRET) }, [SECRET, OLD_SECRET]),
      ),
    ).toBe('ok');
  });

  it('accepts a header with one stale and one good v1 signature, in either order', () => {
    const stale = v1Of(header(BODY, OTHER_SECRET));
    const good = v1Of(header(BODY));
    for (const value of [`t=${NOW_S},${stale},${good}`, `t=${NOW_S},${good},${stale}`]) {
      expect(verdictOf(provider, request(BODY, { 'Stripe-Signature': value }, [SECRET]))).toBe('ok');
      expect(sdkAccepts(BODY, value, SECRET)).toBe(true);
    }
  });

  it('never echoes the signature or secret in its message', () => {
    const value = header(BODY, OTHER_SECRET);
    const verdict = provider.verify(request(BODY, { 'Stripe-Signature': value }, [SECRET]));
    expect(verdict.ok).toBe(false);
    if (!verdict.ok) {
      expect(verdict.message).not.toContain(v1Of(value).slice(3));
      expect(verdict.message).not.toContain(SECRET);
    }
  });
});

describe('stripe identify', () => {
  it('takes id, type and the data object as entity, with no version and no headers', () => {
    const result = identify(provider, request(BODY, { 'Stripe-Signature': header(BODY) }, [SECRET]));
    expect(result).toEqual({
      ok: true,
      event: {
        eventId: 'evt_1PXyZ2AbCdEf',
        eventType: 'invoice.paid',
        entityType: 'invoice',
        entityId: 'in_1PXyZ2',
        entityVersion: null,
        headers: {},
        idUnsigned: false,
      },
    });
  });

  it('does not order by created unless an endpoint asks for it', () => {
    const withVersion = createProvider({ provider: 'stripe', extract: { version: '/created' } });
    const result = identify(withVersion, request(BODY, { 'Stripe-Signature': header(BODY) }, [SECRET]));
    expect(result).toMatchObject({ ok: true, event: { entityVersion: '1712917129' } });
  });

  it('refuses a body without id or type', () => {
    const noId = JSON.stringify({ type: 'x' });
    const noType = JSON.stringify({ id: 'evt_1' });
    expect(identify(provider, request(noId, { 'Stripe-Signature': header(noId) }, [SECRET]))).toMatchObject({
      code: 'event_id_missing',
    });
    expect(
      identify(provider, request(noType, { 'Stripe-Signature': header(noType) }, [SECRET])),
    ).toMatchObject({
      code: 'event_type_missing',
    });
  });

  it('leaves the entity out when the data object lacks its kind', () => {
    const body = JSON.stringify({ id: 'evt_2', type: 'ping', data: { object: { id: 'x_1' } } });
    expect(identify(provider, request(body, { 'Stripe-Signature': header(body) }, [SECRET]))).toMatchObject({
      ok: true,
      event: { entityType: null, entityId: null, entityVersion: null },
    });
  });
});
