import type pg from 'pg';
import { Counter, Histogram, type Registry } from 'prom-client';
import { compileAddressPolicy } from '../core/config/address-policy.ts';
import { withTransaction } from '../core/db/transaction.ts';
import { breakerGate, type Gate, recordBreakerOutcome } from '../core/destinations/breaker.ts';
import {
  type AttemptOutcome,
  type Claimed,
  type ClaimedDelivery,
  claimDue,
} from '../core/destinations/deliveries.ts';
import { refillTokens, takeTokens } from '../core/destinations/rate.ts';
import { destinationRedactor, type Redactor } from '../core/destinations/redact.ts';
import type { Route, Routes } from '../core/destinations/routes.ts';
import type { Logger } from '../core/logging.ts';
import { contextFromTraceparent, inSpan, setOutcome, spanAttributes } from '../core/tracing.ts';
import { entityOf } from './bus-address.ts';
import { createFinisher, type Recorded } from './destination-finisher.ts';
import { busHeaders, requestHeaders, retryDelayMs } from './destination-request.ts';
import { endUnconfigured } from './destination-sweep.ts';
import { createTransports } from './destination-transports.ts';
import { guardedDispatcher } from './guarded-dispatcher.ts';

// The destinations' relay: per destination, loops that claim due deliveries from
// hookgate.destination_deliveries, send them, and record each attempt. Each destination has its
// own loop and its own slots (its `concurrency`), so a slow or hanging destination holds only
// its own deliveries; the database is used only between requests, never during one.
// `createDestinationSender` is the same work one pass at a time (`runOnce`), for tests and tools
// that drive it themselves, with a clock of their own.

export interface DestinationMetrics {
  /**
   * outcome: delivered | retry | dead | superseded | unrecorded. type: http | nats | rabbitmq
   * (absent on deliveries ended because the configuration has no such destination).
   */
  readonly deliveries: Counter<'endpoint' | 'destination' | 'type' | 'outcome'>;
  readonly attemptSeconds: Histogram<'endpoint' | 'destination' | 'type'>;
  /** Attempts whose full record (or the breaker's count) could not be written. */
  readonly bookkeepingFailures: Counter<'endpoint' | 'destination' | 'type'>;
}

export function createDestinationMetrics(registry: Registry): DestinationMetrics {
  return {
    deliveries: new Counter({
      name: 'hookgate_destination_deliveries_total',
      help: 'Delivery attempts to destinations, by endpoint, destination, type (http, nats, rabbitmq) and outcome (delivered, retry, dead, superseded, unrecorded).',
      labelNames: ['endpoint', 'destination', 'type', 'outcome'],
      registers: [registry],
    }),
    attemptSeconds: new Histogram({
      name: 'hookgate_destination_attempt_duration_seconds',
      help: "How long one delivery attempt to a destination took, answer (or the broker's acknowledgement) or not.",
      labelNames: ['endpoint', 'destination', 'type'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers: [registry],
    }),
    bookkeepingFailures: new Counter({
      name: 'hookgate_destination_bookkeeping_failures_total',
      help: "Attempts to destinations whose full record, or the breaker's count of them, could not be written (a minimal record was kept, or none: the lease runs out and the retry limit still holds).",
      labelNames: ['endpoint', 'destination', 'type'],
      registers: [registry],
    }),
  };
}

export interface DestinationRelayOptions {
  readonly pool: pg.Pool;
  readonly routes: Routes;
  readonly logger: Logger;
  readonly metrics?: DestinationMetrics | null;
  /** How long an idle destination waits before looking for due deliveries again. */
  readonly pollIntervalMs?: number;
  /** relay.allowedDestinations: when set, every connection's address is checked against it. */
  readonly allowedDestinations?: readonly string[] | undefined;
  /** How long stop() waits for in-flight deliveries before aborting them. */
  readonly stopTimeoutMs?: number;
  /**
   * The clock of every timed statement (leases, due times, the breaker, the rate limit's bucket);
   * unset: the database's own (production). Tests drive it instead of waiting.
   */
  readonly now?: () => Date;
}

export interface RunningDestinationRelay {
  stop(): Promise<void>;
}

/** An attempt's lease: its timeout and a margin for recording the result; past it, another worker may send again. */
const LEASE_MARGIN_SECONDS = 5;

/** The lease of one attempt, in seconds: longer than its request may take, by the margin. */
export function leaseSecondsFor(timeoutMs: number): number {
  return timeoutMs / 1000 + LEASE_MARGIN_SECONDS;
}

/**
 * After a rate-limited claim of `rows` (at most `allowed`, the bucket's whole `tokens`) that took
 * `taken` tokens: null when the backlog, not the bucket, ended it (fewer rows than allowed); else
 * how long until the bucket holds its next whole token.
 */
export function tokenWaitMs(claim: {
  readonly tokens: number;
  readonly allowed: number;
  readonly rows: number;
  readonly taken: number;
  readonly perSecond: number;
}): number | null {
  if (claim.rows < claim.allowed) return null;
  const left = claim.tokens - claim.taken;
  return Math.max(0, ((1 - left) / claim.perSecond) * 1000);
}

/** A dead attempt that was a failure of the destination (retries ran out on 5xx, timeouts, …), not a refusal. */
function isUnwell(outcome: AttemptOutcome): boolean {
  const status = outcome.httpStatus;
  return status === null || status >= 500 || status === 429 || status === 408;
}

/** What one pass claimed: the breaker's gate, the deliveries to send and those ended `dead` (spent). */
interface ClaimResult extends Claimed {
  readonly gate: Gate | null;
  /** Set when the breaker or the rate limit, not the backlog, stopped the claim: the wait. */
  readonly waitMs: number | null;
}

/** The claim, the send and the record of one attempt, shared by the loops and by `runOnce`. */
function relayParts(options: DestinationRelayOptions) {
  const { pool, logger } = options;
  const now = (): Date | null => options.now?.() ?? null;
  const aborting = new AbortController();
  const finisher = createFinisher(pool, now);
  const dispatcher = options.allowedDestinations
    ? guardedDispatcher(compileAddressPolicy(options.allowedDestinations))
    : undefined;
  const redactors = new Map<Route, Redactor>();
  const redactorOf = (route: Route): Redactor => {
    let redactor = redactors.get(route);
    if (!redactor) {
      redactor = destinationRedactor(route.settings);
      redactors.set(route, redactor);
    }
    return redactor;
  };
  const transports = createTransports(logger, dispatcher);
  const labelsOf = (route: Route) => ({
    endpoint: route.endpoint,
    destination: route.name,
    type: route.settings.type,
  });

  /**
   * Claims up to `slots` due deliveries; with a breaker, none while it is open and one as its
   * probe; with a rate limit, no more than the bucket's whole tokens (refilled, claimed and taken
   * in one transaction, so workers take turns on the bucket).
   */
  async function claim(route: Route, slots: number): Promise<ClaimResult> {
    let free = slots;
    const leaseSeconds = leaseSecondsFor(route.settings.timeout);
    const request = {
      endpoint: route.endpoint,
      destination: route.name,
      leaseSeconds,
      maxAttempts: route.settings.retry.limit + 1,
      ordered: route.settings.ordering === 'entity',
      raw: route.settings.body === 'raw',
      now: now(),
    };
    const none = { toSend: [], spent: [] };
    const breaker = route.settings.breaker;
    let gate: Gate | null = null;
    if (breaker) {
      const opened = await breakerGate(
        pool,
        route.endpoint,
        route.name,
        { failures: breaker.failures, cooldownMs: breaker.cooldown },
        leaseSeconds,
        request.now,
      );
      gate = opened.gate;
      if (gate === 'open' || gate === 'half_open')
        return { gate, ...none, waitMs: opened.waitSeconds * 1000 };
      if (gate === 'probe') {
        logger.info(labelsOf(route), 'destination relay: breaker half-open; probing');
        free = 1;
      }
    }
    const limit = route.settings.rateLimit;
    if (!limit) return { gate, ...(await claimDue(pool, { ...request, limit: free })), waitMs: null };
    return withTransaction(pool, async (tx) => {
      const tokens = await refillTokens(tx, route.endpoint, route.name, limit, request.now);
      const allowed = Math.min(free, Math.floor(tokens));
      const claimed = allowed > 0 ? await claimDue(tx, { ...request, limit: allowed }) : none;
      // A delivery ended dead at the claim was not sent: it takes no token.
      await takeTokens(tx, route.endpoint, route.name, claimed.toSend.length);
      return {
        gate,
        ...claimed,
        waitMs: tokenWaitMs({
          tokens,
          allowed,
          rows: claimed.toSend.length + claimed.spent.length,
          taken: claimed.toSend.length,
          perSecond: limit.perSecond,
        }),
      };
    });
  }

  /** Counts and logs deliveries a claim ended `dead` because their retries were spent. */
  function spentDead(route: Route, spent: readonly ClaimedDelivery[]): void {
    for (const delivery of spent) {
      options.metrics?.deliveries.inc({ ...labelsOf(route), outcome: 'dead' });
      logger.error(
        {
          ...labelsOf(route),
          delivery: delivery.id,
          event_id: delivery.event_id,
          attempts: delivery.attempts,
        },
        'destination relay: dead; its retries are spent and its last attempt was never recorded',
      );
    }
  }

  /** Sends one attempt and says how it ended; records nothing. */
  async function send(route: Route, delivery: ClaimedDelivery): Promise<AttemptOutcome> {
    const startedAt = now() ?? new Date();
    const started = performance.now();
    const attemptInBudget = delivery.attempts - delivery.redelivered_attempts;
    const raw = route.settings.body === 'raw';
    const nothing = { responseHead: null, responseBytes: null, responseHeaders: null };
    const unsendable =
      delivery.body === null
        ? 'the event is no longer in the inbox (pruned): nothing to send'
        : raw && !delivery.raw_body
          ? 'body: raw, but the provider\u2019s original bytes were not kept for this event (it came before the destination had body: raw, or from a provider API replay): nothing to send'
          : null;
    if (unsendable !== null || delivery.body === null) {
      return {
        status: 'dead',
        httpStatus: null,
        error: unsendable,
        retryInSeconds: 0,
        startedAt,
        durationMs: 0,
        ...nothing,
      };
    }
    const body = raw && delivery.raw_body ? delivery.raw_body : delivery.body;
    // webhook.deliver continues the event's trace (the claim span its inbox row names).
    const attributes = spanAttributes({
      ...labelsOf(route),
      event_id: delivery.event_id,
      attempt: delivery.attempts,
    });
    const sent = await inSpan(
      'webhook.deliver',
      attributes,
      async (span) => {
        const entity = entityOf(delivery.entity_key);
        const headers = requestHeaders(
          route.settings,
          {
            endpoint: route.endpoint,
            destination: route.name,
            eventId: delivery.event_id,
            eventType: delivery.event_type,
            webhookId: delivery.webhook_id,
            body,
            keptHeaders: raw ? (delivery.raw_headers ?? null) : null,
          },
          Date.now(),
        );
        const result = await transports.of(route).send({
          // A broker's message also names the event's entity (an HTTP request, as it always did, not).
          headers: route.settings.type === 'http' ? headers : { ...headers, ...busHeaders(entity) },
          body,
          webhookId: delivery.webhook_id,
          values: {
            endpoint: route.endpoint,
            destination: route.name,
            type: delivery.event_type,
            entity_type: entity.type,
            entity_id: entity.id,
          },
          timeoutMs: route.settings.timeout,
          redactor: redactorOf(route),
          signal: aborting.signal,
          nowMs: startedAt.getTime(),
        });
        setOutcome(span, result.outcome, result.outcome === 'delivered' ? undefined : result.error);
        return result;
      },
      contextFromTraceparent(delivery.traceparent),
    );
    const durationMs = performance.now() - started;
    options.metrics?.attemptSeconds.observe(labelsOf(route), durationMs / 1000);
    const common = { startedAt, durationMs, httpStatus: sent.status };
    if (sent.outcome === 'delivered') {
      // A broker's acknowledgement (its stream and sequence, a duplicate) is kept as its answer.
      const acknowledged = { ...nothing, responseHead: sent.note ?? null };
      return { ...common, status: 'delivered', error: null, retryInSeconds: 0, ...acknowledged };
    }
    const answer = {
      responseHead: sent.answer?.text ?? null,
      responseBytes: sent.answer?.bytes ?? null,
      responseHeaders: sent.answer?.headers ?? null,
    };
    if (sent.outcome === 'dead' || attemptInBudget > route.settings.retry.limit) {
      return { ...common, status: 'dead', error: sent.error, retryInSeconds: 0, ...answer };
    }
    return {
      ...common,
      status: 'retrying',
      error: sent.error,
      retryInSeconds: retryDelayMs(route.settings.retry, attemptInBudget, sent.retryAfterSeconds) / 1000,
      ...answer,
    };
  }

  /**
   * Records how an attempt ended (group-committed), counts it, and feeds the breaker, whatever
   * became of the record: a failed record is counted as a bookkeeping failure, and never keeps
   * the breaker from hearing of the attempt.
   */
  async function record(
    route: Route,
    delivery: ClaimedDelivery,
    outcome: AttemptOutcome,
  ): Promise<Recorded | null> {
    const labels = labelsOf(route);
    const log = { ...labels, delivery: delivery.id, event_id: delivery.event_id, attempt: delivery.attempts };
    let recorded: Recorded | null = null;
    try {
      recorded = await finisher.finish({ ...outcome, id: delivery.id, attempt: delivery.attempts });
      if (recorded.failure !== null) {
        options.metrics?.bookkeepingFailures.inc(labels);
        logger.error(
          { ...log, err: recorded.failure },
          "destination relay: the attempt's full record could not be written; a minimal one was",
        );
      }
    } catch (error) {
      options.metrics?.bookkeepingFailures.inc(labels);
      logger.error(
        { ...log, err: error },
        'destination relay: the attempt could not be recorded; its lease runs out and the retry limit holds',
      );
    }
    const breaker = route.settings.breaker;
    // Nothing sent (no event, no kept bytes) says nothing about the destination.
    const sent = delivery.body !== null && (route.settings.body !== 'raw' || Boolean(delivery.raw_body));
    if (breaker && sent) {
      // Only failures that say the destination is unwell count; a 4xx answer says it is up.
      const failed = outcome.status === 'retrying' || (outcome.status === 'dead' && isUnwell(outcome));
      const rate = breaker.rate
        ? { ratio: breaker.rate.ratio, windowMs: breaker.rate.window, minimum: breaker.rate.minimum }
        : null;
      try {
        const state = await recordBreakerOutcome(
          pool,
          route.endpoint,
          route.name,
          !failed,
          breaker.failures,
          rate,
          now(),
        );
        if (state === 'open') logger.warn(labels, 'destination relay: breaker open; deliveries wait');
        else if (state === 'closed' && !failed) logger.debug(labels, 'destination relay: breaker closed');
      } catch (error) {
        options.metrics?.bookkeepingFailures.inc(labels);
        logger.error({ ...log, err: error }, 'destination relay: the breaker could not count the attempt');
      }
    }
    const superseded = recorded !== null && !recorded.written;
    // An attempt with no record at all is counted as such: its delivery is still `sending`, and
    // the claim that takes it up again counts what becomes of it (`dead` if its retries are spent).
    const counted =
      recorded === null
        ? 'unrecorded'
        : superseded
          ? 'superseded'
          : outcome.status === 'retrying'
            ? 'retry'
            : outcome.status;
    options.metrics?.deliveries.inc({ ...labels, outcome: counted });
    if (recorded === null) return null;
    if (superseded) logger.warn(log, 'destination relay: attempt outlived its lease; result not recorded');
    else if (outcome.status === 'delivered')
      logger.info({ ...log, http_status: outcome.httpStatus }, 'destination relay: delivered');
    else if (outcome.status === 'dead')
      logger.error({ ...log, error: outcome.error }, 'destination relay: dead');
    else
      logger.warn(
        { ...log, error: outcome.error, retry_in_seconds: outcome.retryInSeconds },
        'destination relay: failed; retrying',
      );
    return recorded;
  }

  return { claim, spentDead, send, record, aborting, dispatcher, transports };
}

/** What one pass of one destination did. */
export interface PassResult {
  /** The breaker's gate (`probe`: this pass sent the probe); null without a breaker. */
  readonly gate: Gate | null;
  /** The attempts made, each as it ended and whether its row was written. */
  readonly attempts: readonly {
    readonly deliveryId: string;
    readonly eventId: string;
    readonly attempt: number;
    readonly status: AttemptOutcome['status'];
    readonly recorded: Recorded | null;
  }[];
  /** Deliveries the claim ended `dead`, unsent: their retries were spent. */
  readonly spent: readonly string[];
  /**
   * When the breaker (open, or its probe out) or the rate limit stopped the claim: how long until
   * its cooldown or probe lease ends, or until the bucket's next token. Null otherwise.
   */
  readonly waitMs: number | null;
}

export interface DestinationSender {
  /**
   * One pass for one destination: through its breaker (a due probe is this pass's one delivery)
   * and its rate limit, claims what is due, at most its `concurrency`, sends each and records
   * each; resolves once every record is written. What the relay's loop does each turn.
   */
  runOnce(endpoint: string, destination: string): Promise<PassResult>;
  close(): Promise<void>;
}

export function createDestinationSender(options: DestinationRelayOptions): DestinationSender {
  const parts = relayParts(options);
  const find = (endpoint: string, destination: string): Route => {
    const route = options.routes.get(endpoint)?.find((candidate) => candidate.name === destination);
    if (!route) throw new Error(`no destination ${endpoint}/${destination} in the routes`);
    return route;
  };
  return {
    async runOnce(endpoint, destination) {
      const route = find(endpoint, destination);
      const claimed = await parts.claim(route, route.settings.concurrency);
      parts.spentDead(route, claimed.spent);
      const attempts = await Promise.all(
        claimed.toSend.map(async (delivery) => {
          const outcome = await parts.send(route, delivery);
          const recorded = await parts.record(route, delivery, outcome);
          return {
            deliveryId: delivery.id,
            eventId: delivery.event_id,
            attempt: delivery.attempts,
            status: outcome.status,
            recorded,
          };
        }),
      );
      return {
        gate: claimed.gate,
        attempts,
        spent: claimed.spent.map((delivery) => delivery.id),
        waitMs: claimed.waitMs,
      };
    },
    async close() {
      await parts.transports.close();
      await parts.dispatcher?.close();
    },
  };
}

export function startDestinationRelay(options: DestinationRelayOptions): RunningDestinationRelay {
  const { logger } = options;
  const pollIntervalMs = options.pollIntervalMs ?? 1_000;
  const parts = relayParts(options);
  // closing: no more claims (and idle loops wake); parts.aborting: in-flight requests are cut off.
  const closing = new AbortController();
  // Rows naming a destination this configuration lacks are claimed by none of these loops.
  const swept = endUnconfigured({
    pool: options.pool,
    routes: options.routes,
    logger,
    metrics: options.metrics ?? null,
  }).catch((error: unknown) =>
    logger.error({ err: error }, 'destination relay: could not end deliveries to unconfigured destinations'),
  );
  const loops: Promise<void>[] = [];
  for (const routes of options.routes.values()) {
    for (const route of routes) loops.push(run(route));
  }
  if (loops.length > 0) logger.info({ destinations: loops.length }, 'destination relay started');

  function sleep(ms: number, wakeOn: readonly Promise<unknown>[]): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        closing.signal.removeEventListener('abort', done);
        resolve();
      }
      closing.signal.addEventListener('abort', done);
      for (const promise of wakeOn) promise.then(done, done);
    });
  }

  async function run(route: Route): Promise<void> {
    const inFlight = new Set<Promise<void>>();
    const recordings = new Set<Promise<void>>();
    const { concurrency } = route.settings;
    while (!closing.signal.aborted) {
      const free = concurrency - inFlight.size;
      let claimed: ClaimedDelivery[] = [];
      let taken = 0;
      // Set when the rate limit or the breaker, not the backlog, stopped this claim: the wait.
      let waitMs: number | null = null;
      // Claims wait for half the slots (or all of them idle): one claim for several deliveries.
      // And not while records are behind: what is sent but not yet written stays bounded.
      const worthClaiming =
        (inFlight.size === 0 || free >= Math.ceil(concurrency / 2)) && recordings.size < concurrency * 4;
      if (worthClaiming) {
        try {
          const result = await parts.claim(route, free);
          parts.spentDead(route, result.spent);
          claimed = result.toSend;
          taken = result.toSend.length + result.spent.length;
          waitMs = result.waitMs;
        } catch (error) {
          logger.error(
            { endpoint: route.endpoint, destination: route.name, err: error },
            'destination relay: could not claim deliveries',
          );
        }
      }
      for (const delivery of claimed) {
        const failed = (error: unknown) =>
          logger.error(
            { endpoint: route.endpoint, destination: route.name, delivery: delivery.id, err: error },
            'destination relay: delivery bookkeeping failed; the lease runs out and the retry limit holds',
          );
        // A slot is free once the answer is in; its record is written in the background (with
        // others), so the database's latency does not hold the destination's slots. With a
        // breaker the slot waits for the record: the next claim must see the breaker's state.
        const sending: Promise<void> = parts
          .send(route, delivery)
          .then(async (outcome) => {
            const recording: Promise<void> = parts
              .record(route, delivery, outcome)
              .then(() => {})
              .catch(failed)
              .finally(() => recordings.delete(recording));
            recordings.add(recording);
            if (route.settings.breaker) await recording;
          })
          .catch(failed)
          .finally(() => inFlight.delete(sending));
        inFlight.add(sending);
      }
      // All slots filled: more may be due. Otherwise wait for the interval (or the next token,
      // if sooner) or a free slot.
      if (worthClaiming && taken === free && free > 0) continue;
      await sleep(waitMs === null ? pollIntervalMs : Math.min(pollIntervalMs, waitMs), [
        ...inFlight,
        ...recordings,
      ]);
    }
    await Promise.allSettled(inFlight);
    await Promise.allSettled(recordings);
  }

  return {
    async stop() {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => {
        timer = setTimeout(() => resolve('late'), options.stopTimeoutMs ?? 15_000);
      });
      // Loops stop claiming at once; in-flight requests get the stop timeout to finish, then are
      // cut off (recorded as failed attempts, retried by whichever worker runs next).
      closing.abort();
      const drained = Promise.allSettled(loops);
      if ((await Promise.race([drained, late])) === 'late') parts.aborting.abort();
      await drained;
      await swept;
      clearTimeout(timer);
      await parts.transports.close();
      await parts.dispatcher?.close();
    },
  };
}
