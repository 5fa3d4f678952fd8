import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { byteSize, durationMs, formatDuration } from '../../services/core/config/duration.ts';
import { parseConfig } from '../../services/core/config/load.ts';
import { configSchema } from '../../services/core/config/schema.ts';
import { configValuesSchema, readSchema } from './values-schema.ts';

// The generated config schema must never refuse what hookgate accepts, and should refuse what
// hookgate refuses wherever JSON Schema can say it. Each case below is decided by both: ajv on
// the committed values.schema.json, and hookgate's own parseConfig.
const configJson = (readSchema().properties as Record<string, unknown>).config as object;
const validate = new Ajv({ strict: false, validateFormats: false, allErrors: true }).compile(configJson);

const ENV = {
  STRIPE_WEBHOOK_SECRET: 'whsec_x',
  HMAC_SECRET: 'x',
  LEDGER_SIGNING_SECRET: `whsec_${Buffer.from('a destination signing secret').toString('base64')}`,
  LEDGER_TOKEN: 'a-token',
  NATS_USER: 'relay',
  NATS_PASSWORD: 'n-pass',
  RMQ_USER: 'hook',
  RMQ_PASSWORD: 'r-pass',
};
const STRIPE = { provider: 'stripe', secrets: ['${STRIPE_WEBHOOK_SECRET}'] };

function hookgateAccepts(config: unknown): boolean {
  try {
    parseConfig(config, ENV);
    return true;
  } catch {
    return false;
  }
}

function verdicts(config: unknown) {
  return { schema: validate(config), hookgate: hookgateAccepts(config) };
}

function setAt(path: readonly string[], value: unknown): Record<string, unknown> {
  const config: Record<string, unknown> = { endpoints: { stripe: { ...STRIPE } } };
  let node = config;
  for (const [n, key] of path.slice(0, -1).entries()) {
    node[key] = { ...((node[key] as Record<string, unknown>) ?? {}) };
    // A destination needs its url beside the field under test.
    if (path[n - 1] === 'destinations')
      node[key] = { url: 'https://example.test/hooks', ...(node[key] as object) };
    // And a breaker its threshold.
    if (key === 'breaker' && path[n - 2] === 'destinations')
      node[key] = { failures: 1, ...(node[key] as object) };
    // And a breaker's rate rule its ratio.
    if (key === 'rate' && path[n - 1] === 'breaker') node[key] = { ratio: 0.5, ...(node[key] as object) };
    node = node[key] as Record<string, unknown>;
  }
  node[path.at(-1) as string] = value;
  return config;
}

interface Field {
  readonly path: string[];
  readonly kind: 'duration' | 'size';
  readonly min: number;
  readonly max: number;
}

/** Every bounded duration and size of the config schema, with its path (endpoints as `stripe`). */
function boundedFields(node: z.core.$ZodType, path: string[] = []): Field[] {
  const def = node._zod.def as {
    type: string;
    innerType?: z.core.$ZodType;
    in?: unknown;
    out?: { minValue?: number | null; maxValue?: number | null };
    valueType?: z.core.$ZodType;
  };
  if (def.type === 'default' || def.type === 'prefault' || def.type === 'optional')
    return boundedFields(def.innerType as z.core.$ZodType, path);
  if (def.type === 'pipe' && (def.in === durationMs || def.in === byteSize)) {
    const min = def.out?.minValue ?? 0;
    const max = def.out?.maxValue;
    return max == null ? [] : [{ path, kind: def.in === durationMs ? 'duration' : 'size', min, max }];
  }
  if (def.type === 'record') return boundedFields(def.valueType as z.core.$ZodType, [...path, 'stripe']);
  if (def.type === 'object') {
    const shape = (node as unknown as { shape: Record<string, z.core.$ZodType> }).shape;
    return Object.entries(shape).flatMap(([key, child]) => boundedFields(child, [...path, key]));
  }
  return [];
}

const FIELDS = boundedFields(configSchema as unknown as z.core.$ZodType);

describe('values.schema.json', () => {
  it("its config section is generated from hookgate's config schema (regenerate: node test/chart/values-schema.ts --write)", () => {
    const properties = readSchema().properties as Record<string, unknown>;
    expect(properties.config).toEqual(configValuesSchema());
  });

  it('rejects unknown top-level keys and is self-contained (no remote references)', () => {
    const schema = readSchema();
    expect(schema.additionalProperties).toBe(false);
    expect(JSON.stringify(schema)).not.toMatch(/"\$ref"/);
  });

  it('the control: a minimal config passes both', () => {
    expect(verdicts({ endpoints: { stripe: STRIPE } })).toEqual({ schema: true, hookgate: true });
  });
});

describe('values.schema.json: every bounded duration and size, at and past its bounds, as hookgate decides', () => {
  it('finds the bounded fields (tolerance, timeouts, retention, body budgets)', () => {
    const names = FIELDS.map((field) => field.path.join('.'));
    expect(names).toEqual(
      expect.arrayContaining([
        'endpoints.stripe.tolerance',
        'server.requestTimeout',
        'worker.completedJobRetention',
        'relay.pollingInterval',
        'server.maxBufferedBytes',
        'claim.maxBatchBytes',
      ]),
    );
    expect(FIELDS.length).toBeGreaterThan(20);
  });

  it.each(FIELDS.map((field) => [field.path.join('.'), field] as const))('%s', (_name, field) => {
    const cases: [unknown, boolean][] =
      field.kind === 'duration'
        ? [
            [formatDuration(field.max), true],
            [`${field.max}ms`, true],
            [`${field.max + 1}ms`, false],
            [`${field.max / 3_600_000 + 1}h`, false],
            [formatDuration(field.min), true],
            ...(field.min > 0 ? ([[`${field.min - 1}ms`, false]] as [unknown, boolean][]) : []),
          ]
        : [
            [field.max, true],
            [field.max + 1, false],
            [`${field.max}b`, true],
            [`${field.max / 1024 + 1}kib`, false],
            [field.min, true],
            [field.min - 1, false],
            [`${Math.ceil(field.min / 1024)}kib`, true],
          ];
    for (const [value, valid] of cases) {
      const config = setAt(field.path, value);
      // A body budget must hold every body limit (a rule JSON Schema cannot say: keep it out).
      if (field.path.join('.') === 'server.maxBufferedBytes') {
        (config.server as Record<string, unknown>).bodyLimit = 1024;
        for (const endpoint of Object.values(config.endpoints as Record<string, Record<string, unknown>>)) {
          endpoint.bodyLimit = 1024;
        }
      }
      if (field.path.join('.') === 'endpoints.stripe.bodyLimit') {
        config.server = {
          ...(config.server as Record<string, unknown>),
          maxBufferedBytes: 1024 * 1024 * 1024,
        };
      }
      expect(verdicts(config), `${field.path.join('.')}: ${String(value)}`).toEqual({
        schema: valid,
        hookgate: valid,
      });
    }
  });

  it("the issue's case: tolerance 48h is refused by both; 24h accepted by both", () => {
    const at = (tolerance: string) => ({ endpoints: { stripe: { ...STRIPE, tolerance } } });
    expect(verdicts(at('48h'))).toEqual({ schema: false, hookgate: false });
    expect(verdicts(at('24h'))).toEqual({ schema: true, hookgate: true });
    expect(verdicts(at('1440m'))).toEqual({ schema: true, hookgate: true });
    expect(verdicts(at('86401s'))).toEqual({ schema: false, hookgate: false });
  });
});

describe('values.schema.json: claim.concurrency below database.poolSize (defaults 4 and 10)', () => {
  it('decides every pair (and either left out) as hookgate does', () => {
    let refused = 0;
    for (const concurrency of [undefined, ...Array.from({ length: 64 }, (_, i) => i + 1)]) {
      for (const poolSize of [undefined, ...Array.from({ length: 70 }, (_, i) => i + 2)]) {
        const config: Record<string, unknown> = { endpoints: { stripe: STRIPE } };
        if (concurrency !== undefined) config.claim = { concurrency };
        if (poolSize !== undefined) config.database = { poolSize };
        const both = verdicts(config);
        expect(both.schema, JSON.stringify(config)).toBe(both.hookgate);
        if (!both.hookgate) refused += 1;
      }
    }
    // The premise: the grid holds refusals as well as acceptances.
    expect(refused).toBeGreaterThan(1_000);
    expect(verdicts({ database: { poolSize: 2 }, endpoints: { stripe: STRIPE } })).toEqual({
      schema: false,
      hookgate: false,
    });
  });
});

describe('values.schema.json: the endpoint rules that span keys', () => {
  const hmac = { provider: 'hmac', secrets: ['${HMAC_SECRET}'] };
  const cases: { name: string; endpoint: Record<string, unknown>; valid: boolean }[] = [
    { name: 'hmac without its hmac block', endpoint: hmac, valid: false },
    {
      name: 'hmac with an event id header',
      endpoint: { ...hmac, hmac: { header: 'X-Sig', eventIdHeader: 'X-Id' } },
      valid: true,
    },
    {
      name: 'hmac with extract.eventId',
      endpoint: { ...hmac, hmac: { header: 'X-Sig' }, extract: { eventId: '/id' } },
      valid: true,
    },
    {
      name: 'hmac with no way to find the event id',
      endpoint: { ...hmac, hmac: { header: 'X-Sig' } },
      valid: false,
    },
    {
      name: 'hmac with extract but no eventId',
      endpoint: { ...hmac, hmac: { header: 'X-Sig' }, extract: { eventType: '/t' } },
      valid: false,
    },
    {
      name: 'an hmac block on a stripe endpoint',
      endpoint: { ...STRIPE, hmac: { header: 'X-Sig' } },
      valid: false,
    },
    { name: 'replay on a stripe endpoint', endpoint: { ...STRIPE, replay: {} }, valid: true },
    {
      name: 'replay on a shopify endpoint',
      endpoint: { provider: 'shopify', secrets: ['${HMAC_SECRET}'], replay: {} },
      valid: false,
    },
    {
      name: 'github replay without repository and hookId',
      endpoint: { provider: 'github', secrets: ['${HMAC_SECRET}'], replay: { repository: 'o/r' } },
      valid: false,
    },
    {
      name: 'github replay with both',
      endpoint: { provider: 'github', secrets: ['${HMAC_SECRET}'], replay: { repository: 'o/r', hookId: 7 } },
      valid: true,
    },
    {
      name: 'dedupe observe with mode sync',
      endpoint: { ...STRIPE, dedupe: 'observe', mode: 'sync' },
      valid: false,
    },
    {
      name: 'dedupe observe (mode async by default)',
      endpoint: { ...STRIPE, dedupe: 'observe' },
      valid: true,
    },
    {
      name: 'forward, a destination now (refused with the configuration to write)',
      endpoint: { ...STRIPE, handler: 'forward', options: { url: 'https://x.example' } },
      valid: false,
    },
    {
      name: 'record (the default) with an option',
      endpoint: { ...STRIPE, options: { state: '/data' } },
      valid: false,
    },
    {
      name: 'project with its options',
      endpoint: { ...STRIPE, handler: 'project', options: { state: '/data', createOn: ['a.created'] } },
      valid: true,
    },
    {
      name: 'billing notifying a destination its handler routes to',
      endpoint: {
        ...STRIPE,
        handler: 'billing',
        options: { notify: 'ledger' },
        destinations: { ledger: { url: 'https://ledger.example/paid', routedBy: 'handler' } },
      },
      valid: true,
    },
    {
      name: 'billing notifying a URL instead of a destination',
      endpoint: { ...STRIPE, handler: 'billing', options: { notify: 'https://ledger.example/paid' } },
      valid: false,
    },
    {
      name: 'billing with a timeout that is not a duration',
      endpoint: { ...STRIPE, handler: 'billing', options: { stripeTimeout: 'soon' } },
      valid: false,
    },
    {
      name: 'a destination routed by an unknown rule',
      endpoint: { ...STRIPE, destinations: { d: { url: 'https://d.example/', routedBy: 'payload' } } },
      valid: false,
    },
    {
      name: 'sql with an option',
      endpoint: { ...STRIPE, handler: 'sql:SELECT 1', options: { x: 1 } },
      valid: false,
    },
    {
      name: 'a module handler owns its options',
      endpoint: { ...STRIPE, handler: 'module:./h.ts', options: { anything: true } },
      valid: true,
    },
  ];

  it.each(cases)('$name: valid=$valid for both', ({ endpoint, valid }) => {
    expect(verdicts({ endpoints: { e: endpoint } })).toEqual({ schema: valid, hookgate: valid });
  });

  it('no endpoint at all: refused by hookgate; the chart refuses it at render, with a sentence (bad-values.test.ts)', () => {
    expect(verdicts({ endpoints: {} })).toEqual({ schema: true, hookgate: false });
  });
});

describe("values.schema.json: a destination's secrets, as hookgate decides them", () => {
  const SIGNING = `whsec_${Buffer.from('a destination signing secret').toString('base64')}`;
  const destination = (settings: Record<string, unknown>) => ({
    endpoints: {
      e: { ...STRIPE, destinations: { ledger: { url: 'https://ledger.example/in', ...settings } } },
    },
  });
  const cases: { name: string; settings: Record<string, unknown>; valid: boolean }[] = [
    { name: 'a literal signing secret', settings: { signing: { secrets: [SIGNING] } }, valid: false },
    {
      name: 'a referenced signing secret',
      settings: { signing: { secrets: ['${LEDGER_SIGNING_SECRET}'] } },
      valid: true,
    },
    {
      name: 'a signing secret with a literal fallback',
      settings: { signing: { secrets: [`\${LEDGER_SIGNING_SECRET:-${SIGNING}}`] } },
      valid: false,
    },
    {
      name: 'a literal Authorization header',
      settings: { headers: { Authorization: 'Bearer abc' } },
      valid: false,
    },
    { name: 'a literal x-api-key header', settings: { headers: { 'x-api-key': 'abc' } }, valid: false },
    {
      name: 'a literal X-Client-Secret header',
      settings: { headers: { 'X-Client-Secret': 'abc' } },
      valid: false,
    },
    { name: 'a literal X-Auth-Token header', settings: { headers: { 'X-Auth-Token': 'abc' } }, valid: false },
    {
      name: 'a referenced Authorization header after its scheme',
      settings: { headers: { Authorization: 'Bearer ${LEDGER_TOKEN}' } },
      valid: true,
    },
    {
      name: 'a literal header that carries no secret',
      settings: { headers: { 'X-Team': 'payments' } },
      valid: true,
    },
    {
      name: 'a literal token in the URL’s query',
      settings: { url: 'https://l.example/in?token=abc' },
      valid: false,
    },
    {
      name: 'a referenced token in the URL’s query',
      settings: { url: 'https://l.example/in?team=a&token=${LEDGER_TOKEN}' },
      valid: true,
    },
  ];

  it.each(cases)('$name: valid=$valid for both', ({ settings, valid }) => {
    expect(verdicts(destination(settings))).toEqual({ schema: valid, hookgate: valid });
  });

  const bus = (type: 'nats' | 'rabbitmq', credentials: Record<string, unknown>) => ({
    endpoints: {
      e: {
        ...STRIPE,
        destinations: {
          stream:
            type === 'nats'
              ? { type, nats: { servers: ['nats://nats:4222'], subject: 'webhooks.{type}', ...credentials } }
              : {
                  type,
                  rabbitmq: {
                    url: 'amqp://rabbitmq/',
                    exchange: 'webhooks',
                    routingKey: '{type}',
                    ...credentials,
                  },
                },
        },
      },
    },
  });
  const busCases: { name: string; config: unknown; valid: boolean }[] = [
    {
      name: 'a literal NATS password',
      config: bus('nats', { username: '${NATS_USER}', password: 'hunter22' }),
      valid: false,
    },
    { name: 'a literal NATS token', config: bus('nats', { token: 'tok-1' }), valid: false },
    {
      name: 'a literal RabbitMQ username',
      config: bus('rabbitmq', { username: 'hook', password: '${RMQ_PASSWORD}' }),
      valid: false,
    },
    {
      name: 'referenced NATS credentials',
      config: bus('nats', { username: '${NATS_USER}', password: '${NATS_PASSWORD}' }),
      valid: true,
    },
    {
      name: 'referenced RabbitMQ credentials',
      config: bus('rabbitmq', { username: '${RMQ_USER}', password: '${RMQ_PASSWORD}' }),
      valid: true,
    },
  ];
  it.each(busCases)('$name: valid=$valid for both', ({ config, valid }) => {
    expect(verdicts(config)).toEqual({ schema: valid, hookgate: valid });
  });
});
