import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import { HookgateError } from '../../services/core/errors.ts';

const SECRET = `whsec_${Buffer.from('destination-signing-secret').toString('base64')}`;

function withDestinations(destinations: unknown, extra: Record<string, unknown> = {}) {
  return { endpoints: { pay: { provider: 'stripe', secrets: ['whsec_x'], ...extra, destinations } } };
}

function problem(document: unknown, env: Record<string, string> = {}): string {
  try {
    parseConfig(document, env);
  } catch (error) {
    expect(error).toBeInstanceOf(HookgateError);
    return (error as HookgateError).message;
  }
  throw new Error('expected the configuration to be refused');
}

describe('destinations in the configuration', () => {
  it('fill the documented defaults beside any handler', () => {
    const config = parseConfig(
      withDestinations({ ledger: { url: 'https://ledger.example/hooks' } }, { handler: 'billing' }),
      {},
    );
    expect(config.endpoints.pay?.handler).toBe('billing');
    expect(config.endpoints.pay?.destinations?.ledger).toEqual({
      type: 'http',
      url: 'https://ledger.example/hooks',
      routedBy: 'filter',
      timeout: 10_000,
      retry: { limit: 10, backoff: 5_000, max: 900_000, jitter: 0.2 },
      body: 'event',
      concurrency: 4,
      ordering: 'none',
    });
  });

  it('read filters, retries, signing and headers (with ${NAME} references)', () => {
    const config = parseConfig(
      withDestinations({
        eu: {
          url: 'https://eu.example/in',
          filter: {
            types: ['invoice.*'],
            where: [
              { pointer: '/data/object/currency', in: ['eur'] },
              { pointer: '/livemode', equals: true },
              { pointer: '/data/object/customer', exists: true },
            ],
          },
          timeout: '2s',
          retry: { limit: 3, backoff: '1s', max: '1m', jitter: 0 },
          signing: { secrets: ['${EU_SIGNING_SECRET}'] },
          headers: { Authorization: 'Bearer ${EU_TOKEN}' },
        },
      }),
      { EU_TOKEN: 't0ken', EU_SIGNING_SECRET: SECRET },
    );
    const eu = config.endpoints.pay?.destinations?.eu;
    expect(eu?.retry).toEqual({ limit: 3, backoff: 1_000, max: 60_000, jitter: 0 });
    expect(eu?.timeout).toBe(2_000);
    expect(eu?.headers).toEqual({ Authorization: 'Bearer t0ken' });
    expect(eu?.filter?.where).toHaveLength(3);
  });

  it('read a rate limit, its burst defaulting to the rate (at least 1)', () => {
    const parsed = (rateLimit: unknown) =>
      parseConfig(withDestinations({ a: { url: 'https://a.example', rateLimit } }), {}).endpoints.pay
        ?.destinations?.a?.rateLimit;
    expect(parsed({ perSecond: 2.5 })).toEqual({ perSecond: 2.5, burst: 3 });
    expect(parsed({ perSecond: 0.1 })).toEqual({ perSecond: 0.1, burst: 1 });
    expect(parsed({ perSecond: 50, burst: 10 })).toEqual({ perSecond: 50, burst: 10 });
    expect(
      problem(withDestinations({ a: { url: 'https://a.example', rateLimit: { perSecond: 0 } } })),
    ).toContain('endpoints.pay.destinations.a.rateLimit.perSecond');
  });

  it('read a breaker, its cooldown defaulting to 30s', () => {
    const parsed = (breaker: unknown) =>
      parseConfig(withDestinations({ a: { url: 'https://a.example', breaker } }), {}).endpoints.pay
        ?.destinations?.a?.breaker;
    expect(parsed({ failures: 5 })).toEqual({ failures: 5, cooldown: 30_000 });
    expect(parsed({ failures: 1, cooldown: '2m' })).toEqual({ failures: 1, cooldown: 120_000 });
    expect(
      problem(withDestinations({ a: { url: 'https://a.example', breaker: { cooldown: '1m' } } })),
    ).toContain('endpoints.pay.destinations.a.breaker.failures');
  });

  it('read a breaker rate rule, its window defaulting to 1m and its minimum to 10', () => {
    const parsed = (breaker: unknown) =>
      parseConfig(withDestinations({ a: { url: 'https://a.example', breaker } }), {}).endpoints.pay
        ?.destinations?.a?.breaker;
    expect(parsed({ failures: 5, rate: { ratio: 0.5 } })).toEqual({
      failures: 5,
      cooldown: 30_000,
      rate: { ratio: 0.5, window: 60_000, minimum: 10 },
    });
    expect(parsed({ failures: 5, rate: { ratio: 1, window: '10s', minimum: 3 } })?.rate).toEqual({
      ratio: 1,
      window: 10_000,
      minimum: 3,
    });
    for (const ratio of [0, 1.5]) {
      expect(
        problem(
          withDestinations({ a: { url: 'https://a.example', breaker: { failures: 5, rate: { ratio } } } }),
        ),
      ).toContain('endpoints.pay.destinations.a.breaker.rate.ratio');
    }
  });

  it('refuse a condition with none or several of equals, in, exists', () => {
    expect(
      problem(withDestinations({ a: { url: 'https://a.example', filter: { where: [{ pointer: '/x' }] } } })),
    ).toContain(
      'endpoints.pay.destinations.a.filter.where[0]: needs exactly one of equals, in or exists (has none)',
    );
    expect(
      problem(
        withDestinations({
          a: { url: 'https://a.example', filter: { where: [{ pointer: '/x', equals: 1, exists: true }] } },
        }),
      ),
    ).toContain('has equals, exists');
    expect(
      problem(
        withDestinations({
          a: { url: 'https://a.example', filter: { where: [{ pointer: 'x', equals: 1 }] } },
        }),
      ),
    ).toContain('endpoints.pay.destinations.a.filter.where[0].pointer: must be a JSON pointer');
  });

  it('refuse what cannot be delivered as configured', () => {
    expect(problem(withDestinations({ a: { url: 'ftp://a.example' } }))).toContain(
      'endpoints.pay.destinations.a.url: must be an http(s) URL',
    );
    expect(problem(withDestinations({ a: { url: 'https://a.example', body: 'json' } }))).toContain(
      'endpoints.pay.destinations.a.body: must be event or raw',
    );
    // Passing the provider's headers on is only for its original bytes.
    const passthrough = { url: 'https://a.example', passthroughHeaders: ['stripe-signature'] };
    expect(problem(withDestinations({ a: passthrough }))).toContain(
      "endpoints.pay.destinations.a.passthroughHeaders: needs body: raw: a provider's headers (its signature) match only its original bytes",
    );
    expect(problem(withDestinations({ a: { ...passthrough, body: 'event' } }))).toContain(
      'passthroughHeaders: needs body: raw',
    );
    expect(
      problem(
        withDestinations({ a: { ...passthrough, body: 'raw', passthroughHeaders: ['Webhook-Signature'] } }),
      ),
    ).toContain(
      'endpoints.pay.destinations.a.passthroughHeaders[0]: Webhook-Signature is written by the relay itself',
    );
    expect(
      problem(
        withDestinations({
          a: { ...passthrough, body: 'raw', headers: { 'Stripe-Signature': 'x' } },
        }),
      ),
    ).toContain('passthroughHeaders[0]: stripe-signature is also a static header');
    expect(
      parseConfig(withDestinations({ a: { ...passthrough, body: 'raw' } }), {}).endpoints.pay?.destinations
        ?.a,
    ).toMatchObject({ body: 'raw', passthroughHeaders: ['stripe-signature'] });
    expect(
      problem(withDestinations({ a: { url: 'https://a.example', signing: { secrets: ['${A_SECRET}'] } } }), {
        A_SECRET: 'not base64!',
      }),
    ).toContain('endpoints.pay.destinations.a.signing.secrets[0]: must be a whsec_ secret');
    expect(
      problem(withDestinations({ a: { url: 'https://a.example', headers: { 'Webhook-Id': 'x' } } })),
    ).toContain('endpoints.pay.destinations.a.headers.Webhook-Id: is written by the relay itself');
    expect(problem(withDestinations({ 'Bad Name': { url: 'https://a.example' } }))).toContain(
      'destination names use a-z',
    );
    expect(problem(withDestinations({ a: { url: 'https://a.example', retry: { jitter: 2 } } }))).toContain(
      'endpoints.pay.destinations.a.retry.jitter',
    );
  });
});
