import type pg from 'pg';
import { Counter, Histogram, type Registry } from 'prom-client';
import { withTransaction } from '../core/db/transaction.ts';
import { compileAddressPolicy } from '../core/destinations/address-policy.ts';
import { breakerGate, recordBreakerOutcome } from '../core/destinations/breaker.ts';
import { type AttemptOutcome, type ClaimedDelivery, claimDue } from '../core/destinations/deliveries.ts';
import { refillTokens, takeTokens } from '../core/destinations/rate.ts';
import type { Route, Routes } from '../core/destinations/routes.ts';
import type { Logger } from '../core/logging.ts';
import { contextFromTraceparent, inSpan, setOutcome, spanAttributes } from '../core/tracing.ts';
import { createFinisher } from './destination-finisher.ts';
import { postOnce } from './destination-http.ts';
import { requestHeaders, retryDelayMs } from './destination-request.ts';
import { endUnconfigured } from './destination-sweep.ts';
import { guardedDispatcher } from './guarded-dispatcher.ts';

// The destinations' relay: per destination, loops that claim due deliveries from
// hookgate.destination_deliveries, send them, and record each attempt. Each destination has its
// own loop and its own slots (its `concurrency`), so a slow or hanging destination holds only
// its own deliveries; the database is used only between requests, never during one.

export interface DestinationMetrics {
  /** outcome: delivered | retry | dead | superseded. */
  readonly deliveries: Counter<'endpoint' | 'destination' | 'outcome'>;
  readonly attemptSeconds: Histogram<'endpoint' | 'destination'>;
}

export function createDestinationMetrics(registry: Registry): DestinationMetrics {
  return {
    deliveries: new Counter({
      name: 'hookgate_destination_deliveries_total',
      help: 'Delivery attempts to destinations, by endpoint, destination and outcome (delivered, retry, dead, superseded).',
      labelNames: ['endpoint', 'destination', 'outcome'],
      registers: [registry],
    }),
    attemptSeconds: new Histogram({
      name: 'hookgate_destination_attempt_duration_seconds',
      help: 'How long one delivery attempt to a destination took, answer or not.',
      labelNames: ['endpoint', 'destination'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
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
}

export interface RunningDestinationRelay {
  stop(): Promise<void>;
}

/** An attempt's lease: its timeout and a margin for recording the result; past it, another worker may send again. */
const LEASE_MARGIN_SECONDS = 5;

/** A dead attempt that was a failure of the destination (retries ran out on 5xx, timeouts, …), not a refusal. */
function isUnwell(outcome: AttemptOutcome): boolean {
  const status = outcome.httpStatus;
  return status === null || status >= 500 || status === 429 || status === 408;
}

export function startDestinationRelay(options: DestinationRelayOptions): RunningDestinationRelay {
  const { pool, logger } = options;
  const pollIntervalMs = options.pollIntervalMs ?? 1_000;
  // closing: no more claims (and idle loops wake); aborting: in-flight requests are cut off.
  const closing = new AbortController();
  const aborting = new AbortController();
  const finisher = createFinisher(pool);
  const dispatcher = options.allowedDestinations
    ? guardedDispatcher(compileAddressPolicy(options.allowedDestinations))
    : undefined;
  const loops: Promise<void>[] = [];
  for (const routes of options.routes.values()) {
    for (const route of routes) loops.push(run(route));
  }
  // Rows naming a destination this configuration lacks are claimed by none of these loops.
  const swept = endUnconfigured({
    pool,
    routes: options.routes,
    logger,
    metrics: options.metrics ?? null,
  }).catch((error: unknown) =>
    logger.error({ err: error }, 'destination relay: could not end deliveries to unconfigured destinations'),
  );
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
    const { concurrency, timeout } = route.settings;
    while (!closing.signal.aborted) {
      const free = concurrency - inFlight.size;
      let claimed: ClaimedDelivery[] = [];
      // Set when the rate limit, not the backlog, stopped this claim: the wait for a token.
      let tokenWaitMs: number | null = null;
      // Claims wait for half the slots (or all of them idle): one claim for several deliveries.
      // And not while records are behind: what is sent but not yet written stays bounded.
      const worthClaiming =
        (inFlight.size === 0 || free >= Math.ceil(concurrency / 2)) && recordings.size < concurrency * 4;
      if (worthClaiming) {
        try {
          ({ claimed, tokenWaitMs } = await claim(route, free, timeout / 1000 + LEASE_MARGIN_SECONDS));
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
            'destination relay: delivery bookkeeping failed; the lease runs out and it is sent again',
          );
        // A slot is free once the answer is in; its record is written in the background (with
        // others), so the database's latency does not hold the destination's slots. With a
        // breaker the slot waits for the record: the next claim must see the breaker's state.
        const sending: Promise<void> = send(route, delivery)
          .then(async (outcome) => {
            const recording: Promise<void> = record(route, delivery, outcome)
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
      if (worthClaiming && claimed.length === free) continue;
      await sleep(tokenWaitMs === null ? pollIntervalMs : Math.min(pollIntervalMs, tokenWaitMs), [
        ...inFlight,
        ...recordings,
      ]);
    }
    await Promise.allSettled(inFlight);
    await Promise.allSettled(recordings);
  }

  /**
   * Claims up to `free` due deliveries; with a rate limit, no more than the bucket's whole tokens
   * (refilled, claimed and taken in one transaction, so workers take turns on the bucket).
   */
  async function claim(
    route: Route,
    slots: number,
    leaseSeconds: number,
  ): Promise<{ claimed: ClaimedDelivery[]; tokenWaitMs: number | null }> {
    let free = slots;
    const request = {
      endpoint: route.endpoint,
      destination: route.name,
      leaseSeconds,
      ordered: route.settings.ordering === 'entity',
      raw: route.settings.body === 'raw',
    };
    const breaker = route.settings.breaker;
    if (breaker) {
      const { gate, waitSeconds } = await breakerGate(
        pool,
        route.endpoint,
        route.name,
        { failures: breaker.failures, cooldownMs: breaker.cooldown },
        leaseSeconds,
      );
      if (gate === 'open' || gate === 'half_open') return { claimed: [], tokenWaitMs: waitSeconds * 1000 };
      if (gate === 'probe') {
        logger.info(
          { endpoint: route.endpoint, destination: route.name },
          'destination relay: breaker half-open; probing',
        );
        free = 1;
      }
    }
    const limit = route.settings.rateLimit;
    if (!limit) return { claimed: await claimDue(pool, { ...request, limit: free }), tokenWaitMs: null };
    return withTransaction(pool, async (tx) => {
      const tokens = await refillTokens(tx, route.endpoint, route.name, limit);
      const allowed = Math.min(free, Math.floor(tokens));
      const claimed = allowed > 0 ? await claimDue(tx, { ...request, limit: allowed }) : [];
      await takeTokens(tx, route.endpoint, route.name, claimed.length);
      const left = tokens - claimed.length;
      const tokenWaitMs =
        claimed.length < allowed ? null : Math.max(0, ((1 - left) / limit.perSecond) * 1000);
      return { claimed, tokenWaitMs };
    });
  }

  /** Sends one attempt and says how it ended; records nothing. */
  async function send(route: Route, delivery: ClaimedDelivery): Promise<AttemptOutcome> {
    const labels = { endpoint: route.endpoint, destination: route.name };
    const startedAt = new Date();
    const started = performance.now();
    const attemptInBudget = delivery.attempts - delivery.redelivered_attempts;
    let outcome: AttemptOutcome;
    const raw = route.settings.body === 'raw';
    const unsendable =
      delivery.body === null
        ? 'the event is no longer in the inbox (pruned): nothing to send'
        : raw && !delivery.raw_body
          ? 'body: raw, but the provider\u2019s original bytes were not kept for this event (it came before the destination had body: raw, or from a provider API replay): nothing to send'
          : null;
    if (unsendable !== null || delivery.body === null) {
      outcome = {
        status: 'dead',
        httpStatus: null,
        error: unsendable,
        retryInSeconds: 0,
        startedAt,
        durationMs: 0,
        responseHead: null,
      };
    } else {
      const body = raw && delivery.raw_body ? delivery.raw_body : delivery.body;
      // webhook.deliver continues the event's trace (the claim span its inbox row names).
      const attributes = spanAttributes({
        ...labels,
        event_id: delivery.event_id,
        attempt: delivery.attempts,
      });
      const sent = await inSpan(
        'webhook.deliver',
        attributes,
        async (span) => {
          const result = await postOnce({
            url: route.settings.url,
            headers: requestHeaders(
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
            ),
            body,
            timeoutMs: route.settings.timeout,
            signal: aborting.signal,
            ...(dispatcher ? { dispatcher } : {}),
          });
          setOutcome(span, result.outcome, result.outcome === 'delivered' ? undefined : result.error);
          return result;
        },
        contextFromTraceparent(delivery.traceparent),
      );
      const durationMs = performance.now() - started;
      options.metrics?.attemptSeconds.observe(labels, durationMs / 1000);
      const common = { startedAt, durationMs, httpStatus: sent.status };
      if (sent.outcome === 'delivered') {
        outcome = { ...common, status: 'delivered', error: null, retryInSeconds: 0, responseHead: null };
      } else if (sent.outcome === 'dead' || attemptInBudget > route.settings.retry.limit) {
        outcome = {
          ...common,
          status: 'dead',
          error: sent.error,
          retryInSeconds: 0,
          responseHead: sent.error,
        };
      } else {
        const after = sent.retryAfterSeconds;
        outcome = {
          ...common,
          status: 'retrying',
          error: sent.error,
          retryInSeconds: retryDelayMs(route.settings.retry, attemptInBudget, after) / 1000,
          responseHead: sent.error,
        };
      }
    }
    return outcome;
  }

  /** Records how an attempt ended (group-committed), counts it, and feeds the breaker. */
  async function record(route: Route, delivery: ClaimedDelivery, outcome: AttemptOutcome): Promise<void> {
    const labels = { endpoint: route.endpoint, destination: route.name };
    const log = { ...labels, delivery: delivery.id, event_id: delivery.event_id, attempt: delivery.attempts };
    const written = await finisher.finish({ ...outcome, id: delivery.id, attempt: delivery.attempts });
    const breaker = route.settings.breaker;
    // Nothing sent (no event, no kept bytes) says nothing about the destination.
    const sent = delivery.body !== null && (route.settings.body !== 'raw' || Boolean(delivery.raw_body));
    if (breaker && sent) {
      // Only failures that say the destination is unwell count; a 4xx answer says it is up.
      const failed = outcome.status === 'retrying' || (outcome.status === 'dead' && isUnwell(outcome));
      const rate = breaker.rate
        ? { ratio: breaker.rate.ratio, windowMs: breaker.rate.window, minimum: breaker.rate.minimum }
        : null;
      const state = await recordBreakerOutcome(
        pool,
        route.endpoint,
        route.name,
        !failed,
        breaker.failures,
        rate,
      );
      if (state === 'open') logger.warn({ ...labels }, 'destination relay: breaker open; deliveries wait');
      else if (state === 'closed' && !failed)
        logger.debug({ ...labels }, 'destination relay: breaker closed');
    }
    const counted = !written ? 'superseded' : outcome.status === 'retrying' ? 'retry' : outcome.status;
    options.metrics?.deliveries.inc({ ...labels, outcome: counted });
    if (!written) logger.warn(log, 'destination relay: attempt outlived its lease; result not recorded');
    else if (outcome.status === 'delivered')
      logger.info({ ...log, http_status: outcome.httpStatus }, 'destination relay: delivered');
    else if (outcome.status === 'dead')
      logger.error({ ...log, error: outcome.error }, 'destination relay: dead');
    else
      logger.warn(
        { ...log, error: outcome.error, retry_in_seconds: outcome.retryInSeconds },
        'destination relay: failed; retrying',
      );
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
      if ((await Promise.race([drained, late])) === 'late') aborting.abort();
      await drained;
      await swept;
      clearTimeout(timer);
      await dispatcher?.close();
    },
  };
}
