import { describe, expect, it } from 'vitest';
import { brokerConnections } from '../../services/core/config/connections.ts';
import { destinationSecrets } from '../../services/core/config/destination-secrets.ts';
import { parseConfig } from '../../services/core/config/load.ts';
import { destinationLabel } from '../../services/core/destinations/routes.ts';
import { HookgateError } from '../../services/core/errors.ts';
import { entityOf, fillTemplate } from '../../services/worker/bus-address.ts';

// `type: nats` and `type: rabbitmq` in the configuration: what each needs, what is refused
// (credentials written out or inside an address, a template naming what no delivery has, a
// subject that is not one), and how a template is filled in with a provider's text.

function withDestinations(destinations: unknown) {
  return { endpoints: { pay: { provider: 'stripe', secrets: ['whsec_x'], destinations } } };
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

const NATS = { servers: ['nats://nats:4222'], subject: 'webhooks.{endpoint}.{type}' };
const RABBIT = { url: 'amqp://rabbitmq:5672/orders', exchange: 'webhooks', routingKey: '{endpoint}.{type}' };

describe('bus destinations in the configuration', () => {
  it('read a nats and a rabbitmq destination beside the common keys, credentials from ${NAME} references', () => {
    const env = {
      NATS_USER: 'relay',
      NATS_PASSWORD: 'n-secret-1',
      RMQ_USER: 'hook',
      RMQ_PASSWORD: 'r-secret-2',
    };
    const config = parseConfig(
      withDestinations({
        stream: {
          type: 'nats',
          nats: {
            ...NATS,
            username: '${NATS_USER}',
            password: '${NATS_PASSWORD}',
            tls: { ca: '/etc/ca.pem' },
          },
          ordering: 'entity',
          breaker: { failures: 5 },
        },
        queue: {
          type: 'rabbitmq',
          rabbitmq: { ...RABBIT, username: '${RMQ_USER}', password: '${RMQ_PASSWORD}' },
        },
      }),
      env,
    );
    const stream = config.endpoints.pay?.destinations?.stream;
    expect(stream).toMatchObject({
      type: 'nats',
      nats: { ...NATS, username: 'relay', password: 'n-secret-1', tls: { ca: '/etc/ca.pem' } },
      ordering: 'entity',
      retry: { limit: 10 },
    });
    expect(stream?.url).toBeUndefined();
    const queue = config.endpoints.pay?.destinations?.queue;
    expect(queue).toMatchObject({
      type: 'rabbitmq',
      rabbitmq: { ...RABBIT, username: 'hook', password: 'r-secret-2' },
    });
    // Spelled back as their references in any error text stored or logged.
    expect(destinationSecrets(stream!).map((s) => s.reference)).toEqual(['${NATS_USER}', '${NATS_PASSWORD}']);
    expect(destinationSecrets(queue!).map((s) => s.reference)).toEqual(['${RMQ_USER}', '${RMQ_PASSWORD}']);
  });

  it('refuse credentials written out, or in an address, without quoting them', () => {
    const written = problem(
      withDestinations({ a: { type: 'nats', nats: { ...NATS, username: 'relay', password: 'hunter22' } } }),
    );
    expect(written).toContain(
      'endpoints.pay.destinations.a.nats.password: must be one reference, ${NAME} or ${file:/path}',
    );
    expect(written).toContain('endpoints.pay.destinations.a.nats.username: must be one reference');
    expect(written).not.toContain('hunter22');
    expect(
      problem(withDestinations({ a: { type: 'rabbitmq', rabbitmq: { ...RABBIT, password: 'x${P}' } } }), {
        P: 'rabbit-pass-9',
      }),
    ).toContain('endpoints.pay.destinations.a.rabbitmq.password: must be one reference');
    const inUrl = problem(
      withDestinations({
        a: { type: 'rabbitmq', rabbitmq: { ...RABBIT, url: 'amqp://guest:s3cr3t@rabbitmq/' } },
      }),
    );
    expect(inUrl).toContain(
      'endpoints.pay.destinations.a.rabbitmq.url: must not carry credentials (user:password@)',
    );
    expect(inUrl).not.toContain('s3cr3t');
    expect(
      problem(
        withDestinations({ a: { type: 'nats', nats: { ...NATS, servers: ['nats://u:p@nats:4222'] } } }),
      ),
    ).toContain('endpoints.pay.destinations.a.nats.servers[0]: must not carry credentials');
    expect(
      problem(withDestinations({ a: { type: 'nats', nats: { ...NATS, username: '${U}' } } }), { U: 'u' }),
    ).toContain('endpoints.pay.destinations.a.nats.password: is needed with the other');
  });

  it('refuse a destination of one type with the keys of another, and templates that are not addresses', () => {
    expect(problem(withDestinations({ a: { type: 'nats' } }))).toContain(
      'endpoints.pay.destinations.a.nats: is required with type: nats',
    );
    expect(
      problem(withDestinations({ a: { type: 'nats', nats: NATS, url: 'https://a.example' } })),
    ).toContain('endpoints.pay.destinations.a.url: is for type: http');
    expect(problem(withDestinations({ a: { url: 'https://a.example', rabbitmq: RABBIT } }))).toContain(
      'endpoints.pay.destinations.a.rabbitmq: is only for type: rabbitmq',
    );
    expect(problem(withDestinations({ a: {} }))).toContain(
      'endpoints.pay.destinations.a.url: is required: the URL to POST events to',
    );
    expect(problem(withDestinations({ a: { type: 'kafka' } }))).toContain(
      'endpoints.pay.destinations.a.type: must be http, nats or rabbitmq',
    );
    expect(
      problem(withDestinations({ a: { type: 'nats', nats: { ...NATS, subject: 'webhooks.{event}' } } })),
    ).toContain('nats.subject: names {event}: a template may name only {endpoint}, {destination}, {type}');
    expect(
      problem(withDestinations({ a: { type: 'nats', nats: { ...NATS, subject: 'webhooks.>' } } })),
    ).toContain('nats.subject: must be a NATS subject');
    expect(
      problem(withDestinations({ a: { type: 'nats', nats: { ...NATS, subject: 'webhooks..{type}' } } })),
    ).toContain('nats.subject: must be a NATS subject');
    expect(
      problem(withDestinations({ a: { type: 'nats', nats: { ...NATS, servers: ['http://nats'] } } })),
    ).toContain('nats.servers[0]: must be a nats or tls URL');
    expect(
      problem(withDestinations({ a: { type: 'rabbitmq', rabbitmq: { ...RABBIT, routingKey: '{type' } } })),
    ).toContain('rabbitmq.routingKey: has an unmatched { or }');
  });

  it('fill a template with each value reduced to a subject token, the type keeping its dots as levels', () => {
    const values = {
      endpoint: 'pay',
      destination: 'stream',
      type: 'invoice.payment failed',
      entity_type: 'customer',
      entity_id: 'cus.1*>',
    };
    expect(fillTemplate('webhooks.{endpoint}.{type}.{entity_type}.{entity_id}', values)).toBe(
      'webhooks.pay.invoice.payment_failed.customer.cus_1__',
    );
    expect(fillTemplate('x.{type}.{entity_id}', { ...values, type: 'a..b', entity_id: null })).toBe(
      'x.a._.b._',
    );
    expect(entityOf('["customer","cus_1"]')).toEqual({ type: 'customer', id: 'cus_1' });
    expect(entityOf(null)).toEqual({ type: null, id: null });
  });
});

describe('broker connections of a worker process', () => {
  it('one per nats destination, one per RabbitMQ broker (same URL and credentials shared)', () => {
    const env = { A: 'a-user', B: 'b-pass-1', C: 'c-pass-2' };
    const rabbit = (password: string, exchange: string) => ({
      type: 'rabbitmq',
      rabbitmq: { ...RABBIT, exchange, username: '${A}', password },
    });
    const config = parseConfig(
      withDestinations({
        s1: { type: 'nats', nats: NATS },
        s2: { type: 'nats', nats: NATS },
        q1: rabbit('${B}', 'one'),
        q2: rabbit('${B}', 'two'),
        q3: rabbit('${C}', 'three'),
        web: { url: 'https://a.example' },
      }),
      env,
    );
    expect(brokerConnections(config)).toEqual({ nats: 2, rabbitmq: 2 });
  });
});

describe('how the reports name a destination', () => {
  it('with its type when it is a broker; an HTTP or unconfigured one as it always was', () => {
    const config = parseConfig(
      withDestinations({ s: { type: 'nats', nats: NATS }, web: { url: 'https://a.example' } }),
      {},
    );
    expect(destinationLabel(config, 'pay', 's')).toBe('s (nats)');
    expect(destinationLabel(config, 'pay', 'web')).toBe('web');
    expect(destinationLabel(config, 'pay', 'gone')).toBe('gone');
    expect(destinationLabel(null, 'pay', 's')).toBe('s');
  });
});
