import { z } from 'zod';
import { isJsonPointer } from '../providers/json-pointer.ts';
import { standardWebhooksKey } from '../providers/standard-webhooks.ts';
import { parseAllowEntry } from './address-policy.ts';
import { natsSchema, rabbitmqSchema } from './bus-schema.ts';
import { durationMs } from './duration.ts';

// `endpoints.<name>.destinations.<dest>`: where an endpoint's events are fanned out to, beside
// whatever its handler does (docs/destinations.md). Every bound and default is here.

export const DESTINATION_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

const scalar = z.union([z.string(), z.number(), z.boolean(), z.null()]);

/** One payload condition: the value at `pointer` equals a value, is one of several, or exists. */
const conditionSchema = z
  .strictObject({
    pointer: z.string().refine(isJsonPointer, 'must be a JSON pointer such as /data/object/currency'),
    equals: scalar.optional(),
    in: z.array(scalar).min(1, 'needs at least one value').max(100).optional(),
    exists: z.boolean().optional(),
  })
  .superRefine((condition, ctx) => {
    const given = (['equals', 'in', 'exists'] as const).filter((key) => key in condition);
    if (given.length !== 1) {
      ctx.addIssue({
        code: 'custom',
        message: `needs exactly one of equals, in or exists (has ${given.length === 0 ? 'none' : given.join(', ')})`,
      });
    }
  });

export type FilterCondition = z.output<typeof conditionSchema>;

/** Event types: exact (`invoice.paid`) or with `*` standing for any run of characters (`invoice.*`). */
const eventTypeGlob = z
  .string()
  .min(1, 'must not be empty')
  .max(256)
  .regex(/^[^\s]+$/, 'must not contain whitespace');

const filterSchema = z.strictObject({
  /** The event's type must match one of these. Unset: any type. */
  types: z.array(eventTypeGlob).min(1, 'needs at least one type, or leave types out').max(100).optional(),
  /** Every condition must hold. Unset: no condition. */
  where: z
    .array(conditionSchema)
    .min(1, 'needs at least one condition, or leave where out')
    .max(20)
    .optional(),
});

export type DestinationFilter = z.output<typeof filterSchema>;

const httpUrl = z
  .string({ error: 'is required: the URL to POST events to' })
  .refine((text) => URL.canParse(text) && /^https?:$/.test(new URL(text).protocol), 'must be an http(s) URL')
  // fetch refuses such a URL on every attempt (and its refusal would quote the password): said at load.
  .refine(
    (text) => !URL.canParse(text) || (new URL(text).username === '' && new URL(text).password === ''),
    'must not carry credentials (user:password@): send them in headers, e.g. Authorization',
  );

/** What fetch sends as a header value: no NUL, CR or LF, nothing above U+00FF (checked resolved, never printed). */
const headerValueText = z
  .string()
  .max(8192)
  .refine(
    (text) => /^[^\0\r\n]*$/.test(text) && [...text].every((c) => c.charCodeAt(0) <= 0xff),
    'must be a legal HTTP header value: no line breaks, NUL or characters above U+00FF',
  );

const headerName = z
  .string()
  .regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'must be an HTTP header name such as Authorization');

/** Headers the relay writes itself; a static header may not replace them. */
export const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  'content-type',
  'content-length',
  'host',
  'idempotency-key',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
]);

const retrySchema = z
  .strictObject({
    /** Retries after the first attempt (5xx, 429, 408, timeouts); other answers are dead at once. */
    limit: z.number().int().min(0).max(50).default(10),
    /** The first retry's delay; doubles per retry. */
    backoff: durationMs.pipe(z.number().min(100).max(3_600_000)).default(5_000),
    /** No retry waits longer than this. */
    max: durationMs.pipe(z.number().min(100).max(86_400_000)).default(900_000),
    /** The random share taken off each delay (0: none, 1: anywhere from 0 to the delay). */
    jitter: z.number().min(0).max(1).default(0.2),
  })
  .prefault({});

const signingSchema = z.strictObject({
  /** Standard Webhooks secrets (`whsec_…`, base64), newest first: each signs (rotation). */
  secrets: z
    .array(
      z
        .string()
        .refine(
          (secret) => standardWebhooksKey(secret) !== null,
          'must be a whsec_ secret (base64 after whsec_)',
        ),
    )
    .min(1, 'needs at least one secret')
    .max(5),
});

/** Where a destination's deliveries go: POSTed to a URL, or published to a message broker. */
const DESTINATION_TYPES = ['http', 'nats', 'rabbitmq'] as const;

export const destinationSchema = z
  .strictObject({
    type: z.enum(DESTINATION_TYPES, { error: 'must be http, nats or rabbitmq' }).default('http'),
    /** `type: http` (and only it): the URL each delivery is POSTed to. */
    url: httpUrl.optional(),
    /** `type: nats` (and only it): the JetStream servers and the subject (bus-schema.ts). */
    nats: natsSchema.optional(),
    /** `type: rabbitmq` (and only it): the broker, the exchange and the routing key. */
    rabbitmq: rabbitmqSchema.optional(),
    /**
     * `filter` (default): every event the endpoint's handler processes that `filter` matches.
     * `handler`: only the events the handler routes to it (billing's `notify`, a module's
     * `route()`), whatever the filter would say: it has none.
     */
    routedBy: z.enum(['filter', 'handler'], { error: 'must be filter or handler' }).default('filter'),
    filter: filterSchema.optional(),
    /** Per-request timeout; a timeout is retried like a 5xx. */
    timeout: durationMs.pipe(z.number().min(100).max(120_000)).default(10_000),
    retry: retrySchema,
    signing: signingSchema.optional(),
    /** Static request headers (values may use `${NAME}`, e.g. `Authorization: Bearer ${TOKEN}`). */
    headers: z.record(headerName, headerValueText).optional(),
    /**
     * `event`: the stored (verified) payload as JSON. `raw`: the provider's original request
     * bytes, verbatim, so the receiver can re-verify the provider's own signature (the endpoint
     * then keeps those bytes in hookgate.inbox_raw).
     */
    body: z.enum(['event', 'raw'], { error: 'must be event or raw' }).default('event'),
    /**
     * With `body: raw`: the provider's request headers sent on as received (e.g.
     * `stripe-signature`); absent ones are left out. Only with `body: raw`.
     */
    passthroughHeaders: z
      .array(headerName)
      .min(1, 'needs at least one header, or leave it out')
      .max(20)
      .optional(),
    /**
     * `entity`: at most one delivery in flight per entity (the event's entity type and id), in
     * the events' version order; a failing one holds back its own entity only. Default `none`.
     */
    ordering: z.enum(['none', 'entity']).default('none'),
    /** Deliveries in flight at once per worker process. */
    concurrency: z.number().int().min(1).max(64).default(4),
    /**
     * A circuit breaker shared by every worker: opens after `failures` consecutive failed
     * attempts (or by its `rate` rule); while open no delivery is attempted (none spends a retry); after `cooldown` one
     * probe is sent, whose success closes it and whose failure opens it again. Unset: none.
     */
    breaker: z
      .strictObject({
        failures: z.number().int().min(1).max(1_000),
        cooldown: durationMs.pipe(z.number().min(100).max(3_600_000)).default(30_000),
        /**
         * Also opens when, in the current `window` (it starts at its first attempt), at least
         * `minimum` attempts were made and the failed share is `ratio` or more. Unset: none.
         */
        rate: z
          .strictObject({
            ratio: z.number().gt(0).max(1),
            window: durationMs.pipe(z.number().min(1_000).max(3_600_000)).default(60_000),
            minimum: z.number().int().min(1).max(100_000).default(10),
          })
          .optional(),
      })
      .optional(),
    /**
     * Most deliveries started per second to this destination, across all workers together
     * (attempts and retries alike); `burst` (default: perSecond, at least 1) may start at once
     * after a quiet spell. Unset: no limit.
     */
    rateLimit: z
      .strictObject({
        perSecond: z.number().min(0.01).max(10_000),
        burst: z.number().int().min(1).max(10_000).optional(),
      })
      .transform((limit) => ({
        perSecond: limit.perSecond,
        burst: limit.burst ?? Math.max(1, Math.ceil(limit.perSecond)),
      }))
      .optional(),
  })
  .superRefine((destination, ctx) => {
    if (destination.type === 'http' && destination.url === undefined) {
      ctx.addIssue({ code: 'custom', path: ['url'], message: 'is required: the URL to POST events to' });
    }
    if (destination.type !== 'http' && destination.url !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['url'],
        message: `is for type: http; a ${destination.type} destination's broker is under ${destination.type}:`,
      });
    }
    for (const bus of ['nats', 'rabbitmq'] as const) {
      if (destination.type === bus && destination[bus] === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: [bus],
          message: `is required with type: ${bus} (docs/destinations.md, "Message buses")`,
        });
      }
      if (destination.type !== bus && destination[bus] !== undefined) {
        ctx.addIssue({ code: 'custom', path: [bus], message: `is only for type: ${bus}` });
      }
    }
    if (destination.routedBy === 'handler' && destination.filter !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['filter'],
        message:
          'is for destinations routed by filter: one with routedBy: handler gets exactly the events its handler routes to it',
      });
    }
    for (const name of Object.keys(destination.headers ?? {})) {
      if (RESERVED_HEADERS.has(name.toLowerCase())) {
        ctx.addIssue({ code: 'custom', path: ['headers', name], message: 'is written by the relay itself' });
      }
    }
    const passed = destination.passthroughHeaders ?? [];
    if (passed.length > 0 && destination.body !== 'raw') {
      ctx.addIssue({
        code: 'custom',
        path: ['passthroughHeaders'],
        message:
          "needs body: raw: a provider's headers (its signature) match only its original bytes, and body: event sends the stored payload instead",
      });
    }
    const staticHeaders = new Set(Object.keys(destination.headers ?? {}).map((name) => name.toLowerCase()));
    passed.forEach((name, index) => {
      const lower = name.toLowerCase();
      if (RESERVED_HEADERS.has(lower) || lower.startsWith('x-hookgate-') || lower === 'user-agent') {
        ctx.addIssue({
          code: 'custom',
          path: ['passthroughHeaders', index],
          message: `${name} is written by the relay itself`,
        });
      } else if (staticHeaders.has(lower)) {
        ctx.addIssue({
          code: 'custom',
          path: ['passthroughHeaders', index],
          message: `${name} is also a static header: keep one`,
        });
      }
    });
  });

export type DestinationConfig = z.output<typeof destinationSchema>;

export const destinationsSchema = z
  .record(
    z.string().regex(DESTINATION_NAME, 'destination names use a-z, 0-9, - and _ (at most 63)'),
    destinationSchema,
  )
  .refine((destinations) => Object.keys(destinations).length <= 50, 'at most 50 destinations per endpoint');

/** `relay.allowedDestinations`: each entry a CIDR, an IP address or a host pattern (address-policy.ts). */
export const allowedDestinationsSchema = z
  .array(
    z.string().superRefine((text, ctx) => {
      const entry = parseAllowEntry(text);
      if (typeof entry === 'string') ctx.addIssue({ code: 'custom', message: entry });
    }),
  )
  .min(1, 'needs at least one entry, or leave allowedDestinations out (no restriction)')
  .max(1_000);
