import { isIP } from 'node:net';
import { z } from 'zod';
import { hmacOptionsSchema } from '../providers/hmac-options.ts';
import { PROVIDER_NAMES } from '../providers/index.ts';
import { schemeOptionsSchema } from '../providers/scheme-options.ts';
import { bodyLimitOrigin, endpointBodyLimit, formatBytes, MAX_ENDPOINT_BODY_LIMIT } from './body-limits.ts';
import { consoleSchema } from './console-schema.ts';
import { dedupeSchema, reconcileHorizonIssues } from './dedupe-schema.ts';
import { allowedDestinationsSchema, destinationsSchema } from './destinations-schema.ts';
import { byteSize, durationMs } from './duration.ts';
import { DEFAULT_HANDLER, HANDLER_CHOICES, HANDLER_PATTERN, handlerKindOf } from './handler-kinds.ts';
import { handlerOptionsSchema } from './handler-options.ts';
import { providerIssues } from './provider-options.ts';
import { reconcileIssues, reconcileSchema } from './reconcile-schema.ts';

/** Cross-field rules run even after other problems, so every problem is reported at once. */
const ALWAYS = { when: () => true };

const ENDPOINT_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const JSON_POINTER = /^(\/([^~/]|~[01])*)*$/;

/** An IP address, v4 or v6 (`0.0.0.0`, `127.0.0.1`, `::`): no names, so no resolver surprises. */

/** How long a finished job is kept (pg-boss `deleteAfterSeconds`): from a second to 30 days. */
const completedJobRetention = () =>
  durationMs
    .pipe(
      z
        .number()
        .min(1_000)
        .max(30 * 86_400_000),
    )
    .default(1_800_000);

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

/** A handler handler-kinds.ts knows: `record`, `project`, …, `module:<path>`, `sql:<statement>`. */
const handlerSchema = z.string().regex(HANDLER_PATTERN, `must be ${HANDLER_CHOICES}`);

const envName = z
  .string()
  .regex(/^[A-Z_][A-Z0-9_]*$/, 'must be an environment variable name such as STRIPE_API_KEY');

const replaySchema = z.strictObject({
  /** API root: https://api.stripe.com / https://api.github.com by default (a proxy or a test fake otherwise). */
  apiBase: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
  /** The environment variable holding the API credential (default STRIPE_API_KEY / GITHUB_TOKEN). */
  credentialEnv: envName.optional(),
  /** GitHub, a repository webhook: the repository, as owner/repo (with hookId). */
  repository: z
    .string()
    .regex(/^[\w.-]+\/[\w.-]+$/, 'must be owner/repo')
    .optional(),
  /** GitHub, an organization webhook: the organization's login (with hookId). */
  organization: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9-]{0,38}$/, 'must be an organization login such as acme')
    .optional(),
  /** GitHub: the webhook's id (its settings page, or the X-GitHub-Hook-ID header). */
  hookId: z.number().int().positive().optional(),
  /**
   * GitHub, a GitHub App's webhook: the App's id (a number) or client id (Iv…); its private key
   * (PEM) is read from credentialEnv (default GITHUB_APP_PRIVATE_KEY).
   */
  appId: z
    .union([
      z.number().int().positive(),
      z.string().regex(/^Iv[0-9A-Za-z.]+$/, 'must be the App id (a number) or its client id (Iv…)'),
    ])
    .optional(),
});

/**
 * A handler routes only to the endpoint's destinations with `routedBy: handler`, and such a
 * destination needs a handler that routes to it: what a handler's options name is checked here,
 * at load, so a misspelt name is a config error rather than every event failing.
 */
function routingIssues(endpoint: {
  handler?: unknown;
  options?: unknown;
  destinations?: unknown;
}): { path: PropertyKey[]; message: string }[] {
  const kind = typeof endpoint.handler === 'string' ? handlerKindOf(endpoint.handler)?.kind : undefined;
  if (!kind) return [];
  const destinations =
    typeof endpoint.destinations === 'object' && endpoint.destinations !== null
      ? (endpoint.destinations as Record<string, { routedBy?: unknown } | undefined>)
      : {};
  const byHandler = Object.keys(destinations).filter((name) => destinations[name]?.routedBy === 'handler');
  const options =
    typeof endpoint.options === 'object' && endpoint.options !== null
      ? (endpoint.options as Record<string, unknown>)
      : {};
  const issues: { path: PropertyKey[]; message: string }[] = [];
  const routed = kind.routesTo === 'any' ? null : kind.routesTo(options);
  for (const [option, name] of Object.entries(routed ?? {})) {
    if (byHandler.includes(name)) continue;
    issues.push({
      path: ['options', option],
      message: Object.hasOwn(destinations, name)
        ? `names destination ${name}, which is routed by its filter: give it routedBy: handler (and no filter) for the handler to route events to it`
        : `names destination ${name}, which this endpoint does not have${byHandler.length > 0 ? ` (its destinations with routedBy: handler: ${byHandler.join(', ')})` : ''}: add it under destinations with routedBy: handler`,
    });
  }
  if (routed === null) return issues;
  const named = new Set(Object.values(routed));
  for (const name of byHandler) {
    if (named.has(name)) continue;
    issues.push({
      path: ['destinations', name, 'routedBy'],
      message: `is handler, but handler ${String(endpoint.handler)} routes no event to it${endpoint.handler === 'billing' ? ` (billing routes to the destination its notify option names)` : ''}: it would never receive anything`,
    });
  }
  return issues;
}

const endpointSchema = z
  .strictObject({
    provider: z.enum(PROVIDER_NAMES),
    /** Newest first. Deliveries signed with any of them are accepted (rotation). */
    secrets: z.array(z.string().min(1, 'must not be empty')).min(1, 'needs at least one secret'),
    tolerance: durationMs.pipe(z.number().min(1_000).max(86_400_000)).default(300_000),
    mode: z.enum(['async', 'sync']).default('async'),
    handler: handlerSchema.default(DEFAULT_HANDLER),
    /** Handler-specific settings, validated by the handler itself. */
    options: z.record(z.string(), z.unknown()).default({}),
    extract: extractSchema.optional(),
    hmac: hmacOptionsSchema.optional(),
    /** The declarative scheme's options (provider: scheme). */
    scheme: schemeOptionsSchema.optional(),
    /** The URL the provider posts to, exactly as configured there, for providers that sign it. */
    url: z
      .url({ protocol: /^https?$/, error: 'must be an http(s) URL, exactly as configured at the provider' })
      .optional(),
    /** Asana: `revealSecret: true` logs the handshake's secret so it can be configured (see docs/providers.md). */
    handshake: z.strictObject({ revealSecret: z.boolean().default(false) }).optional(),
    /**
     * Off unless set: a delivery carrying `X-Hookgate-Replay-Token` equal to one of these is
     * accepted without the provider's signature or timestamp (an operator re-posting an event),
     * and flagged `received_via = 'replay_token'`. A wrong token is a 401.
     */
    replaySecrets: z
      .array(z.string().min(16, 'must be at least 16 characters (it replaces the signature)'))
      .min(1, 'needs at least one secret, or leave replaySecrets out')
      .optional(),
    /**
     * `enforce` (default): a duplicate is answered 200 and changes nothing. `observe`: duplicates
     * are still counted but also dispatched again, for measuring the duplicate rate in front of an
     * existing receiver before switching to `enforce`.
     */
    dedupe: z.enum(['enforce', 'observe']).default('enforce'),
    /**
     * Off unless set: the console's payload search (`contains`) through an index of this
     * endpoint's payloads (the baseline's partial GIN index), for events received while it is on.
     * Off, the index costs this endpoint's events nothing and the console searches their payloads
     * among the newest rows it reads (console.scanRows) instead (docs/console.md, docs/storage.md).
     */
    payloadSearch: z.boolean().default(false),
    /**
     * Largest body this endpoint accepts (413 body_too_large beyond it). Unset: the provider's
     * documented maximum (github, gitlab: 25 MiB), else server.bodyLimit. Must fit in
     * server.maxBufferedBytes.
     */
    bodyLimit: byteSize
      .pipe(
        z
          .number()
          .int()
          .min(1024, 'must be at least 1kib')
          .max(
            MAX_ENDPOINT_BODY_LIMIT,
            'must be at most 256mib (PostgreSQL cannot store a larger JSON body)',
          ),
      )
      .optional(),
    /** Where `hookgate replay` and reconcile pull this endpoint's events from (stripe, github, paddle). */
    replay: replaySchema.optional(),
    /** Where applied events are fanned out to, each with its filter (docs/destinations.md). */
    destinations: destinationsSchema.optional(),
    /** Continuous reconciliation against the provider's API (docs/reconcile.md); off unless set. */
    reconcile: reconcileSchema.optional(),
  })
  // `when`: these rules run even when other keys of the endpoint are wrong, so one run reports
  // every problem; the fields they read may then be invalid, hence the type checks.
  .superRefine((endpoint, ctx) => {
    if (typeof endpoint !== 'object' || endpoint === null) return;
    // Keys that cannot be decoded would make every delivery a 401, and options a provider does
    // not use would be silently ignored: both are refused at start instead.
    for (const { path, message } of providerIssues(endpoint)) ctx.addIssue({ code: 'custom', path, message });
    for (const { path, message } of reconcileIssues(endpoint))
      ctx.addIssue({ code: 'custom', path, message });
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
    if (endpoint.replay && typeof endpoint.replay === 'object') {
      if (
        endpoint.provider !== 'stripe' &&
        endpoint.provider !== 'github' &&
        endpoint.provider !== 'paddle'
      ) {
        ctx.addIssue({
          code: 'custom',
          path: ['replay'],
          message: 'is available for stripe, github and paddle endpoints',
        });
      }
      const { repository, organization, appId, hookId } = endpoint.replay;
      const targets = [repository, organization, appId].filter((value) => value !== undefined).length;
      if (endpoint.provider === 'github' && targets !== 1) {
        ctx.addIssue({
          code: 'custom',
          path: ['replay'],
          message:
            targets === 0
              ? 'needs the webhook that delivers here: repository (owner/repo) and hookId, organization and hookId, or appId (a GitHub App)'
              : 'names more than one webhook: set only one of repository, organization or appId',
        });
      } else if (endpoint.provider === 'github' && appId === undefined && hookId === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['replay', 'hookId'],
          message: `is required with ${repository === undefined ? 'organization' : 'repository'} (the webhook's id, from its settings page or the X-GitHub-Hook-ID header)`,
        });
      } else if (endpoint.provider === 'github' && appId !== undefined && hookId !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['replay', 'hookId'],
          message: 'is not used with appId: a GitHub App has one webhook',
        });
      }
      if (endpoint.provider !== 'github' && targets + (hookId === undefined ? 0 : 1) > 0) {
        ctx.addIssue({
          code: 'custom',
          path: ['replay'],
          message: 'repository, organization, hookId and appId are for github endpoints',
        });
      }
    }
    // A sync endpoint applies inside the request; a re-dispatch would go to the queue instead.
    if (endpoint.dedupe === 'observe' && endpoint.mode === 'sync') {
      ctx.addIssue({
        code: 'custom',
        path: ['dedupe'],
        message: 'observe is only available with mode: async',
      });
    }
    for (const { path, message } of routingIssues(endpoint)) ctx.addIssue({ code: 'custom', path, message });
    const options = handlerOptionsSchema(endpoint.handler)?.safeParse(endpoint.options ?? {});
    for (const issue of options?.success === false ? options.error.issues : []) {
      if (issue.code === 'unrecognized_keys') {
        for (const key of issue.keys)
          ctx.addIssue({ code: 'custom', path: ['options', ...issue.path, key], message: 'unknown option' });
      } else {
        ctx.addIssue({ code: 'custom', path: ['options', ...issue.path], message: issue.message });
      }
    }
  }, ALWAYS);

export const configSchema = z
  .strictObject({
    server: z
      .strictObject({
        /**
         * Address the gateway's webhook port listens on (env LISTEN_ADDRESS wins). Unset: 0.0.0.0
         * with DATABASE_URL (containers), 127.0.0.1 for the embedded demo database.
         */
        listenAddress: listenAddress.optional(),
        /**
         * Address /metrics (and the worker's probes) listen on (env METRICS_LISTEN_ADDRESS wins).
         * Unset: 127.0.0.1, with or without DATABASE_URL; the chart sets 0.0.0.0.
         */
        metricsListenAddress: listenAddress.optional(),
        /**
         * Largest accepted body for endpoints that set no bodyLimit and whose provider documents
         * no maximum (github's and gitlab's are 25 MiB); larger deliveries get 413 without being read further.
         */
        bodyLimit: byteSize.default(1024 * 1024),
        /**
         * Most request-body bytes the gateway holds at once, reserved from the declared length
         * until answered and claimed (reading, verifying, waiting for and in a claim). A delivery that would take it
         * past this gets 503 overloaded before its body is read; one is always let in when none
         * is held. Bounds memory against many large or slow bodies, and while PostgreSQL is slow.
         */
        maxBufferedBytes: byteSize
          .pipe(
            z
              .number()
              .int()
              .min(1024 * 1024)
              .max(16 * 1024 * 1024 * 1024),
          )
          .default(64 * 1024 * 1024),
        /** Largest accepted header block (Node's --max-http-header-size). */
        headerLimit: byteSize.default(16 * 1024),
        /**
         * A request not received within this is answered 408; one not answered within this of its
         * first byte (its claim still waiting for PostgreSQL) is answered 503 (docs/gateway.md).
         */
        requestTimeout: durationMs.pipe(z.number().min(1_000).max(300_000)).default(10_000),
        /** How long SIGTERM waits for in-flight requests before closing anyway. */
        shutdownTimeout: durationMs.pipe(z.number().min(0).max(600_000)).default(15_000),
        /**
         * Proxies in front of the gateway whose X-Forwarded-For entry is trusted. 0: the source is
         * the socket's peer (behind an ingress, the ingress itself). Used for replay-token limits.
         */
        trustedProxyHops: z.number().int().min(0).max(10).default(0),
        /** Wrong replay tokens per source and endpoint, per gateway process, before `429`. */
        replayTokenLimit: z
          .strictObject({
            maxFailures: z.number().int().min(1).max(10_000).default(10),
            window: durationMs.pipe(z.number().min(1_000).max(86_400_000)).default(60_000),
            /** Sources remembered; past this the least recently failed is forgotten. */
            maxSources: z.number().int().min(100).max(1_000_000).default(10_000),
          })
          .prefault({}),
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
        /**
         * How long `serve` waits at start for an unreachable database before giving up (exit 1).
         * Kubernetes' startup probe allows the chart's pods a minute; 0 gives up at once.
         */
        startupTimeout: durationMs.pipe(z.number().min(0).max(600_000)).default(60_000),
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
        /**
         * Most body bytes in one claim transaction: a batch closes before the next delivery would
         * take it past this (a larger delivery goes alone). Bounds each claim statement's size and
         * time, whatever server.bodyLimit allows.
         */
        maxBatchBytes: byteSize
          .pipe(
            z
              .number()
              .int()
              .min(64 * 1024)
              .max(256 * 1024 * 1024),
          )
          .default(4 * 1024 * 1024),
        /**
         * Least time between two wake-ups of an endpoint's workers sent by one gateway. Each
         * wake-up (NOTIFY) makes concurrent claims commit one after another; under load one per
         * interval is enough, and claims in between are announced by the next. 0: every claim.
         */
        wakeupInterval: durationMs.pipe(z.number().min(0).max(1_000)).default(20),
      })
      .prefault({}),
    worker: z
      .strictObject({
        /** Most events applied together in one transaction (jobs, each a claim batch, are fetched to fill it). */
        batchSize: z.number().int().min(1).max(500).default(100),
        /** Fetch-and-apply loops per endpoint per process (each holds one connection while applying). */
        concurrency: z.number().int().min(1).max(16).default(2),
        /**
         * Connections per worker process for apply transactions. Unset: what the worker's loops
         * need (endpoints × concurrency + 2 + the destination relay's), so no configuration
         * starts short.
         */
        poolSize: z.number().int().min(2).max(200).optional(),
        /** How long an idle loop waits before fetching again (a full batch fetches again at once). */
        pollingInterval: durationMs.pipe(z.number().min(100).max(60_000)).default(500),
        /** Attempts per event are retryLimit + 1; past that the event is `parked` or `dead`. */
        retryLimit: z.number().int().min(0).max(50).default(7),
        /** First retry delay; doubles per attempt, the second half of each wait random, capped below. */
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
        /** How often a worker runs pg-boss supervision (expiry, lost heartbeats). */
        superviseInterval: durationMs.pipe(z.number().min(1_000).max(3_600_000)).default(5_000),
        /** How long SIGTERM waits for in-flight batches before leaving them to expire and retry. */
        shutdownTimeout: durationMs.pipe(z.number().min(0).max(600_000)).default(15_000),
        /**
         * Finished apply jobs are deleted this long after they finished: the inbox row is the
         * durable record. Whole seconds.
         */
        completedJobRetention: completedJobRetention(),
        /**
         * How often one worker looks for pending events whose job is finished or gone, and sends
         * them again (or ends those with no attempt left). Also how long a dispatch must be old
         * before it is looked at.
         */
        sweepInterval: durationMs.pipe(z.number().min(1_000).max(86_400_000)).default(60_000),
        /**
         * How often a worker runs pg-boss retention (one worker per pass). A finished job is gone
         * between its retention and its retention plus this interval after it finished.
         */
        maintenanceInterval: durationMs.pipe(z.number().min(1_000).max(86_400_000)).default(900_000),
      })
      .prefault({}),
    /** The destinations' relay (docs/destinations.md), the one way anything leaves hookgate. */
    relay: z
      .strictObject({
        /** How long a destination with nothing due waits before looking again (docs/destinations.md). */
        pollingInterval: durationMs.pipe(z.number().min(50).max(60_000)).default(500),
        /**
         * The relay's connections to destinations may go only to these: CIDRs (`10.0.0.0/8`), IP
         * addresses, host names (`api.example.com`) and `*.example.com`; private, loopback, link-local and
         * metadata addresses only by a CIDR entry covering them, checked on the address each
         * connection goes to (docs/destinations.md#address-safety). Unset: no restriction.
         */
        allowedDestinations: allowedDestinationsSchema.optional(),
      })
      .prefault({}),
    /** Quarantine (docs/gateway.md#quarantine): verified deliveries that cannot become events. */
    quarantine: z
      .strictObject({
        /**
         * Most held (neither released nor dropped) rows per endpoint. At the cap a further
         * delivery that would be quarantined is answered 503 quarantine_full (the provider
         * retries it), never acknowledged and lost; a copy of a held body is still answered 200.
         */
        maxHeldPerEndpoint: z.number().int().min(1).max(1_000_000).default(10_000),
      })
      .prefault({}),
    /** Deduplication's own retention, apart from the payloads' (docs/storage.md, "Dedupe horizon"). */
    dedupe: dedupeSchema,
    /** The web console (docs/console.md). */
    console: consoleSchema.prefault({}),
    endpoints: z
      .record(
        z.string().regex(ENDPOINT_NAME, 'endpoint names use a-z, 0-9, - and _ (at most 63)'),
        endpointSchema,
      )
      .refine((endpoints) => Object.keys(endpoints).length > 0, 'define at least one endpoint'),
  })
  .superRefine((config, ctx) => {
    if (typeof config !== 'object' || config === null) return;
    // Every endpoint's largest body must fit in the bytes the gateway may hold, or such deliveries
    // would only get in when it holds nothing else, and under steady traffic never.
    const server = config.server;
    const endpoints = config.endpoints;
    if (
      typeof server?.maxBufferedBytes === 'number' &&
      typeof server.bodyLimit === 'number' &&
      typeof endpoints === 'object' &&
      endpoints !== null
    ) {
      const budget = formatBytes(server.maxBufferedBytes);
      const onServerLimit: string[] = [];
      for (const [name, endpoint] of Object.entries(endpoints)) {
        if (typeof endpoint !== 'object' || endpoint === null) continue;
        if (endpoint.bodyLimit !== undefined && typeof endpoint.bodyLimit !== 'number') continue;
        const limit = endpointBodyLimit(endpoint, server.bodyLimit);
        if (limit <= server.maxBufferedBytes) continue;
        const origin = bodyLimitOrigin(endpoint);
        if (origin === 'server') {
          onServerLimit.push(name);
          continue;
        }
        const raise = `raise server.maxBufferedBytes to at least ${formatBytes(limit)} (keep it several times larger)`;
        ctx.addIssue({
          code: 'custom',
          path: ['endpoints', name, 'bodyLimit'],
          message:
            origin === 'endpoint'
              ? `${formatBytes(limit)} is larger than server.maxBufferedBytes (${budget}): ${raise}, or lower this`
              : `is unset, so it is ${formatBytes(limit)}, the largest body ${endpoint.provider} sends, which is larger than server.maxBufferedBytes (${budget}): ${raise}, or set a smaller bodyLimit here (larger deliveries are then refused with 413, and ${endpoint.provider} may not retry them)`,
        });
      }
      if (onServerLimit.length > 0) {
        ctx.addIssue({
          code: 'custom',
          path: ['server', 'maxBufferedBytes'],
          message: `${budget} is smaller than server.bodyLimit (${formatBytes(server.bodyLimit)}), which endpoint${onServerLimit.length > 1 ? 's' : ''} ${onServerLimit.join(', ')} use${onServerLimit.length > 1 ? '' : 's'}: raise it to at least server.bodyLimit (keep it several times larger)`,
        });
      }
    }
    // Reconciliation lists no further back than deduplication remembers.
    const horizon = config.dedupe?.horizon;
    if (typeof horizon === 'number' && typeof endpoints === 'object' && endpoints !== null) {
      for (const [name, endpoint] of Object.entries(endpoints)) {
        if (typeof endpoint !== 'object' || endpoint === null) continue;
        for (const { path, message } of reconcileHorizonIssues(endpoint.reconcile, horizon))
          ctx.addIssue({ code: 'custom', path: ['endpoints', name, ...path], message });
      }
    }
    // Every in-flight claim holds a connection; readiness checks need one more.
    const concurrency = config.claim?.concurrency;
    const poolSize = config.database?.poolSize;
    if (typeof concurrency === 'number' && typeof poolSize === 'number' && concurrency >= poolSize) {
      ctx.addIssue({
        code: 'custom',
        path: ['claim', 'concurrency'],
        message: `must be below database.poolSize (${poolSize})`,
      });
    }
  }, ALWAYS);

export type Config = z.output<typeof configSchema>;
export type EndpointConfig = Config['endpoints'][string];
