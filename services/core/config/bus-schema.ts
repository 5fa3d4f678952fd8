import { z } from 'zod';

// `type: nats` and `type: rabbitmq` destinations: where on the broker a delivery is published
// (docs/destinations.md, "Message buses"). Every bound and default is here; the credentials are
// `${NAME}` references (load.ts refuses them written out), resolved once when the configuration
// loads, and never part of an address.

/** The values a subject or routing-key template may name. */
export const TEMPLATE_FIELDS = ['endpoint', 'destination', 'type', 'entity_type', 'entity_id'] as const;
export type TemplateField = (typeof TEMPLATE_FIELDS)[number];

const PLACEHOLDER = /\{([^{}]*)\}/g;

/** The placeholders a template names that are not template fields. */
export function unknownPlaceholders(template: string): string[] {
  return [...template.matchAll(PLACEHOLDER)]
    .map((match) => match[1]!)
    .filter((name) => !(TEMPLATE_FIELDS as readonly string[]).includes(name));
}

const template = (what: string, example: string) =>
  z
    .string({ error: `is required: the ${what}, e.g. ${example}` })
    .min(1, `must not be empty: the ${what}, e.g. ${example}`)
    .max(255)
    .superRefine((text, ctx) => {
      const unknown = unknownPlaceholders(text);
      if (unknown.length > 0) {
        ctx.addIssue({
          code: 'custom',
          message: `names {${unknown.join('}, {')}}: a template may name only ${TEMPLATE_FIELDS.map((f) => `{${f}}`).join(', ')}`,
        });
      }
      if (/[{}]/.test(text.replace(PLACEHOLDER, ''))) {
        ctx.addIssue({ code: 'custom', message: 'has an unmatched { or }' });
      }
    });

/** A NATS subject template: dot-separated tokens, no spaces and no wildcards (`*`, `>`). */
const subjectTemplate = template('subject', 'webhooks.{endpoint}.{type}').superRefine((text, ctx) => {
  const literal = text.replace(PLACEHOLDER, 'x');
  if (!/^[^\s*>.]+(\.[^\s*>.]+)*$/.test(literal)) {
    ctx.addIssue({
      code: 'custom',
      message:
        'must be a NATS subject: tokens separated by single dots, no whitespace, no wildcards (* or >), not starting or ending with a dot',
    });
  }
});

/** A file the worker reads when it connects (PEM). */
const pemFile = z.string().min(1).max(4096);

const tlsSchema = z.strictObject({
  /** CA certificates to trust (PEM file); unset: the system's. */
  ca: pemFile.optional(),
  /** A client certificate and its key (PEM files), for brokers that authenticate by certificate. */
  cert: pemFile.optional(),
  key: pemFile.optional(),
});

export type BusTls = z.output<typeof tlsSchema>;

const brokerAddress = (schemes: readonly string[], example: string) =>
  z
    .string({ error: `is required: the broker's address, e.g. ${example}` })
    .refine(
      (text) => URL.canParse(text) && schemes.includes(new URL(text).protocol.slice(0, -1)),
      `must be a ${schemes.join(' or ')} URL, e.g. ${example}`,
    )
    // The equivalent of an http destination's rule: credentials live in their own `${NAME}` fields.
    .refine(
      (text) => !URL.canParse(text) || (new URL(text).username === '' && new URL(text).password === ''),
      `must not carry credentials (user:password@): give them as username and password (\${NAME} references)`,
    );

export const natsSchema = z
  .strictObject({
    /** The servers to connect to (the client picks one and fails over to the others). */
    servers: z
      .array(brokerAddress(['nats', 'tls'], 'nats://nats:4222'))
      .min(1, 'needs at least one server')
      .max(20),
    /** The subject each delivery is published to: `{type}` keeps the event type's dots as levels. */
    subject: subjectTemplate,
    /** Credentials: `${NAME}` references only. A username needs its password; a token stands alone. */
    username: z.string().min(1).max(1024).optional(),
    password: z.string().min(1).max(4096).optional(),
    token: z.string().min(1).max(4096).optional(),
    /** Connect with TLS (set by `tls://` servers too); its files, if any. */
    tls: z.union([z.literal(true), tlsSchema]).optional(),
  })
  .superRefine((nats, ctx) => {
    if ((nats.username === undefined) !== (nats.password === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: [nats.username === undefined ? 'username' : 'password'],
        message: 'is needed with the other: a username and its password go together',
      });
    }
    if (nats.token !== undefined && nats.username !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['token'], message: 'or a username and password, not both' });
    }
  });

export type NatsSettings = z.output<typeof natsSchema>;

export const rabbitmqSchema = z
  .strictObject({
    /** The broker, with its vhost as the path (amqp://rabbitmq:5672/orders); amqps:// for TLS. */
    url: brokerAddress(['amqp', 'amqps'], 'amqp://rabbitmq:5672/vhost'),
    username: z.string().min(1).max(1024).optional(),
    password: z.string().min(1).max(4096).optional(),
    /** The exchange published to (it must exist: hookgate declares nothing). `""`: the default exchange. */
    exchange: z
      .string()
      .max(255)
      .regex(/^[A-Za-z0-9_.:-]*$/, 'must be an exchange name (a-z, 0-9, _ . : -)'),
    /** The routing key of each delivery (at most 255 bytes once filled in). */
    routingKey: template('routing key', '{endpoint}.{type}'),
    tls: z.union([z.literal(true), tlsSchema]).optional(),
  })
  .superRefine((rabbit, ctx) => {
    if ((rabbit.username === undefined) !== (rabbit.password === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: [rabbit.username === undefined ? 'username' : 'password'],
        message: 'is needed with the other: a username and its password go together',
      });
    }
  });

export type RabbitmqSettings = z.output<typeof rabbitmqSchema>;

/** Destinations with the same key share a worker's connection (and channel) to that broker. */
export function rabbitmqBrokerKey(settings: RabbitmqSettings): string {
  return JSON.stringify([
    settings.url,
    settings.username ?? null,
    settings.password ?? null,
    settings.tls ?? null,
  ]);
}

/** The keys of a bus block whose values are credentials: written only as references. */
export const BUS_CREDENTIAL_KEYS = ['username', 'password', 'token'] as const;
