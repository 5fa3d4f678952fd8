import { isIP } from 'node:net';
import { z } from 'zod';
import { hmacOptionsSchema } from '../providers/hmac-options.ts';
import { PROVIDER_NAMES } from '../providers/index.ts';
import { standardWebhooksKey } from '../providers/standard-webhooks.ts';
import { byteSize, durationMs } from './duration.ts';

const ENDPOINT_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const JSON_POINTER = /^(\/([^~/]|~[01])*)*$/;

/** An IP address, v4 or v6 (`0.0.0.0`, `127.0.0.1`, `::`): no names, so no resolver surprises. */
export const listenAddress = z
  .string()
  .refine((value) => isIP(value) !== 0, 'must be an IP address such as 0.0.0.0, 127.0.0.1 or ::');

const jsonPointer = z.string().regex(JSON_POINTER, 'must be a JSON pointer such as /data/id');

const extractSchema = z.strictObject({
  eventId: jsonPointer.optional(),
  eventType: jsonPointer.optional(),
  entityType: jsonPointer.optional(),
  entityId: jsonPointer.optional(),
  version: jsonPointer.optional(),
});

/** `record`, `project`, `forward`, `billing`, `module:<path>` or `sql:<statement>`. */
const handlerSchema = z
  .string()
  .regex(
    /^(record|project|forward|billing|module:.+|sql:.+)$/s,
    'must be record, project, forward, billing, module:<path> or sql:<statement>',
  );

const endpointSchema = z
  .strictObject({
    provider: z.enum(PROVIDER_NAMES),
    /** Newest first. Deliveries signed with any of them are accepted (rotation). */
    secrets: z.array(z.string().min(1, 'must not be empty')).min(1, 'needs at least one secret'),
    tolerance: durationMs.pipe(z.number().min(1_000).max(86_400_000)).default(300_000),
    mode: z.enum(['async', 'sync']).default('async'),
    handler: handlerSchema.default('record'),
    /** Handler-specific settings, validated by the handler itself. */
    options: z.record(z.string(), z.unknown()).default({}),
    extract: extractSchema.optional(),
    hmac: hmacOptionsSchema.optional(),
  })
  .superRefine((endpoint, ctx) => {
    // A key that cannot be decoded would make every delivery a 401; refuse it at start instead.
    if (endpoint.provider === 'standard-webhooks' || endpoint.provider === 'svix') {
      endpoint.secrets.forEach((secret, index) => {
        if (standardWebhooksKey(secret) === null) {
          ctx.addIssue({
            code: 'custom',
            path: ['secrets', index],
            message: 'is not a Standard Webhooks secret: expected whsec_ followed by base64',
          });
        }
      });
    }
    if (endpoint.provider === 'hmac' && !endpoint.hmac) {
      ctx.addIssue({ code: 'custom', path: ['hmac'], message: 'is required when provider is hmac' });
    }
    if (endpoint.provider !== 'hmac' && endpoint.hmac) {
      ctx.addIssue({ code: 'custom', path: ['hmac'], message: 'is only allowed when provider is hmac' });
    }
    if (
      endpoint.provider === 'hmac' &&
      endpoint.hmac &&
      !endpoint.hmac.eventIdHeader &&
      !endpoint.extract?.eventId
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['hmac', 'eventIdHeader'],
        message: 'hmac endpoints need hmac.eventIdHeader or extract.eventId to find the event id',
      });
    }
  });

export const configSchema = z
  .strictObject({
    server: z
      .strictObject({
        /**
         * Address the gateway and /metrics listen on (env LISTEN_ADDRESS wins). Unset: 0.0.0.0
         * with DATABASE_URL (containers), 127.0.0.1 for the embedded demo database.
         */
        listenAddress: listenAddress.optional(),
        /** Largest accepted body; larger deliveries get 413 without being read further. */
        bodyLimit: byteSize.default(1024 * 1024),
        /** Largest accepted header block (Node's --max-http-header-size). */
        headerLimit: byteSize.default(16 * 1024),
        /** A request that has not been answered after this long is cut off. */
        requestTimeout: durationMs.pipe(z.number().min(1_000).max(300_000)).default(10_000),
        /** How long SIGTERM waits for in-flight requests before closing anyway. */
        shutdownTimeout: durationMs.pipe(z.number().min(0).max(600_000)).default(15_000),
      })
      .prefault({}),
    database: z
      .strictObject({
        /** Connections per process for the gateway's claims. */
        poolSize: z.number().int().min(2).max(200).default(10),
        /** Longest any single statement may run; protects the ack path from a stuck database. */
        statementTimeout: durationMs.pipe(z.number().min(100).max(600_000)).default(5_000),
        /** Longest a request waits for a free pooled connection before answering 503. */
        connectTimeout: durationMs.pipe(z.number().min(100).max(60_000)).default(2_000),
      })
      .prefault({}),
    claim: z
      .strictObject({
        /** Most deliveries committed together in one transaction. */
        maxBatch: z.number().int().min(1).max(1_000).default(200),
        /** Longest the first delivery of a batch waits for company before the batch commits. */
        maxWait: durationMs.pipe(z.number().min(0).max(1_000)).default(2),
        /** Claim transactions that may be in flight at once (each holds one connection). */
        concurrency: z.number().int().min(1).max(64).default(4),
        /** Deliveries that may wait for a claim transaction; beyond this they get 503 overloaded at once. */
        maxQueued: z.number().int().min(1).max(100_000).default(5_000),
      })
      .prefault({}),
    worker: z
      .strictObject({
        /** Most jobs fetched and applied together in one transaction. */
        batchSize: z.number().int().min(1).max(500).default(50),
        /** Fetch-and-apply loops per endpoint per process (each holds one connection while applying). */
        concurrency: z.number().int().min(1).max(16).default(2),
        /** Connections per worker process for apply transactions. */
        poolSize: z.number().int().min(2).max(200).default(10),
        /** How long an idle loop waits before fetching again (a full batch fetches again at once). */
        pollingInterval: durationMs.pipe(z.number().min(100).max(60_000)).default(500),
        /** Attempts per event are retryLimit + 1; past that the event is `parked` or `dead`. */
        retryLimit: z.number().int().min(0).max(50).default(7),
        /** First retry delay; doubles per attempt with jitter (pg-boss retryBackoff), capped below. */
        retryDelay: durationMs.pipe(z.number().min(0).max(3_600_000)).default(2_000),
        retryDelayMax: durationMs.pipe(z.number().min(1_000).max(86_400_000)).default(600_000),
        /** An attempt still running after this long counts as lost and is retried. Whole seconds. */
        expireIn: durationMs.pipe(z.number().min(1_000).max(86_400_000)).default(120_000),
        /**
         * A live worker refreshes its in-flight jobs' heartbeat every third of this; a job whose
         * heartbeat is older is taken to be lost (its worker died) and retried. Whole seconds, at
         * least 10 (pg-boss). Used only when below expireIn, which bounds an attempt anyway.
         */
        heartbeat: durationMs.pipe(z.number().min(10_000).max(3_600_000)).default(10_000),
        /** How often a worker runs pg-boss supervision (expiry, lost heartbeats, dead-lettering). */
        superviseInterval: durationMs.pipe(z.number().min(1_000).max(3_600_000)).default(5_000),
        /** How long SIGTERM waits for in-flight batches before leaving them to expire and retry. */
        shutdownTimeout: durationMs.pipe(z.number().min(0).max(600_000)).default(15_000),
      })
      .prefault({}),
    relay: z
      .strictObject({
        /** Retries of a downstream delivery after its first try (5xx, 429, timeouts); other 4xx are dead at once. */
        retryLimit: z.number().int().min(0).max(50).default(10),
        /** First retry delay; doubles per retry with jitter, capped below. */
        retryDelay: durationMs.pipe(z.number().min(1_000).max(3_600_000)).default(5_000),
        retryDelayMax: durationMs.pipe(z.number().min(1_000).max(86_400_000)).default(900_000),
        /** A delivery still running after this long counts as lost and is retried; at least 130 s, above the relay's longest request timeout (120 s). */
        expireIn: durationMs.pipe(z.number().min(130_000).max(86_400_000)).default(300_000),
        /**
         * A live relay refreshes its in-flight deliveries' heartbeat every half of this; one whose
         * heartbeat is older (its worker died) is retried. Whole seconds, at least 10.
         */
        heartbeat: durationMs.pipe(z.number().min(10_000).max(3_600_000)).default(10_000),
        /** Messages fetched at once per kind; they are sent concurrently. */
        batchSize: z.number().int().min(1).max(100).default(10),
        /** Fetch loops per kind per process. */
        concurrency: z.number().int().min(1).max(16).default(2),
      })
      .prefault({}),
    endpoints: z
      .record(
        z.string().regex(ENDPOINT_NAME, 'endpoint names use a-z, 0-9, - and _ (at most 63)'),
        endpointSchema,
      )
      .refine((endpoints) => Object.keys(endpoints).length > 0, 'define at least one endpoint'),
  })
  .superRefine((config, ctx) => {
    // Every in-flight claim holds a connection; readiness checks need one more.
    if (config.claim.concurrency >= config.database.poolSize) {
      ctx.addIssue({
        code: 'custom',
        path: ['claim', 'concurrency'],
        message: `must be below database.poolSize (${config.database.poolSize})`,
      });
    }
  });

export type Config = z.output<typeof configSchema>;
export type EndpointConfig = Config['endpoints'][string];
