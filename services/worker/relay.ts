import type pg from 'pg';
import type { JobResult, JobWithMetadata, PgBoss } from 'pg-boss';
import { Counter, type Registry } from 'prom-client';
import { z } from 'zod';
import { REFERENCE, resolveReferences } from '../core/config/interpolate.ts';
import type { Logger } from '../core/logging.ts';
import {
  type AttemptResult,
  beginAttempt,
  deliveryStatus,
  finishAttempt,
  recordNowhere,
} from '../core/outbox/deliveries.ts';
import { envelopeTraceparent, readOutboxEnvelope } from '../core/outbox/message.ts';
import { outboxQueue } from '../core/queue/names.ts';
import {
  DEFAULT_OUTBOX_QUEUE_SETTINGS,
  ensureOutboxQueues,
  OUTBOX_KINDS,
  type OutboxQueueSettings,
} from '../core/queue/queues.ts';
import {
  activeTraceId,
  contextFromTraceparent,
  inSpan,
  setOutcome,
  spanAttributes,
  traceIdOf,
} from '../core/tracing.ts';
import { failNotBefore } from './relay-defer.ts';
import { headerValue } from './relay-headers.ts';
import { postOnce, type SendResult } from './relay-http.ts';

export interface RelayMetrics {
  /**
   * hookgate_forward_deliveries_total{kind,endpoint,outcome}; kind: the outbox kind (forward,
   * notify); outcome: delivered|retry|dead|duplicate|nowhere. The name predates `notify`.
   */
  readonly deliveries: Counter<'kind' | 'endpoint' | 'outcome'>;
}

export function createRelayMetrics(registry: Registry): RelayMetrics {
  return {
    deliveries: new Counter({
      name: 'hookgate_forward_deliveries_total',
      help: 'Downstream deliveries by the relay, by outbox kind (forward, notify) and outcome.',
      labelNames: ['kind', 'endpoint', 'outcome'],
      registers: [registry],
    }),
  };
}

export interface RelayOptions {
  readonly boss: PgBoss;
  readonly pool: pg.Pool;
  readonly logger: Logger;
  readonly kinds?: readonly string[];
  /** Queue settings used when the relay creates its queues. */
  readonly queues?: OutboxQueueSettings;
  /** Jobs fetched at once per queue; they are sent concurrently. */
  readonly batchSize?: number;
  /** Independent fetch loops per queue, so one slow batch does not hold up the next. */
  readonly concurrency?: number;
  readonly pollingIntervalSeconds?: number;
  /** Timeout for messages that carry none. */
  readonly defaultTimeoutMs?: number;
  /** Upper bound on any message's timeout (keep it below the queue's expireInSeconds). */
  readonly maxTimeoutMs?: number;
  /** How long stop() waits for in-flight deliveries. */
  readonly stopTimeoutMs?: number;
  readonly metrics?: RelayMetrics;
  /** Where `${NAME}` references in a message's URL are resolved (default: the process's). */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

const isHttpUrl = (text: string) => URL.canParse(text) && /^https?:$/.test(new URL(text).protocol);

/** Whether the text holds a `${NAME}` reference (not only `$${` escapes). */
const hasReference = (text: string) => [...text.matchAll(REFERENCE)].some((match) => match[1] === '');

/** What a handler puts in an outbox message for the relay. */
const messageSchema = z.looseObject({
  /**
   * null: nowhere to deliver (e.g. billing without notifyUrl); recorded as settled. `${NAME}`
   * references are resolved from the relay's environment when it sends (config/relay-urls.ts):
   * the URL is recorded and shown as written, so a secret in it is stored nowhere.
   */
  url: z
    .string()
    .refine((text) => hasReference(text) || isHttpUrl(text), 'must be an http(s) URL')
    .nullable(),
  idempotencyKey: z.string().min(1),
  endpoint: z.string().optional(),
  eventId: z.string().optional(),
  eventType: z.string().optional(),
  timeoutMs: z.number().int().positive().optional(),
  body: z.unknown(),
});

type RelayMessage = z.output<typeof messageSchema>;

/**
 * Delivers the outbox queues (`forward`, `notify`) over HTTP. Each message is POSTed as JSON
 * with `Idempotency-Key`; the result is recorded in hookgate.outbox_deliveries, which also stops
 * a later replay of a delivered key from sending again.
 *
 * - 2xx → `delivered`, job completed.
 * - 5xx, 429, 408, timeout, network error → job failed; pg-boss retries with backoff. On the
 *   last attempt the record becomes `dead` and pg-boss moves the job to `<queue>.dead`.
 * - other 4xx / 3xx, or a request fetch cannot build → `dead` at once: the job is settled as
 *   `deadletter` (pg-boss skips the remaining retries and moves it to `<queue>.dead`).
 */
export async function startRelays(options: RelayOptions): Promise<{ stop(): Promise<void> }> {
  const { boss, pool, logger } = options;
  const kinds = options.kinds ?? OUTBOX_KINDS;
  const defaultTimeoutMs = options.defaultTimeoutMs ?? 10_000;
  const maxTimeoutMs = options.maxTimeoutMs ?? 120_000;
  const stopTimeoutMs = options.stopTimeoutMs ?? 15_000;
  const stopping = new AbortController();
  const queues = options.queues ?? DEFAULT_OUTBOX_QUEUE_SETTINGS;
  // A downstream's Retry-After is honoured up to the queue's longest backoff, so none can park a
  // delivery for longer than the configured policy would.
  const maxRetryAfterSeconds = Math.max(1, queues.retryDelayMaxSeconds);
  const env = options.env ?? process.env;
  await ensureOutboxQueues(boss, queues, kinds);

  /**
   * The URL to send to, with what error texts must say instead of the environment's values in it
   * (`${NAME}`, as written), or why there is none: an unset variable, no http(s) URL once resolved.
   */
  const target = (
    written: string,
  ): { url: string; redact: (text: string) => string } | { problem: string } => {
    const resolved = resolveReferences(written, env);
    if (resolved.missing.length > 0)
      return { problem: `environment variable ${[...new Set(resolved.missing)].join(', ')} is not set` };
    if (!isHttpUrl(resolved.text))
      return { problem: 'the URL, its references resolved, is not an http(s) URL' };
    const spellings = [...resolved.substituted].flatMap(([name, value]) =>
      [...new Set([value, encodeURIComponent(value), encodeURI(value)])].map(
        (text) => [text, `\${${name}}`] as const,
      ),
    );
    // Longest first, so a value that contains another is replaced whole.
    spellings.sort((x, y) => y[0].length - x[0].length);
    const redact = (text: string) =>
      spellings.reduce((out, [value, name]) => out.split(value).join(name), text);
    return { url: resolved.text, redact };
  };

  const count = (kind: string, message: RelayMessage | null, outcome: string) =>
    options.metrics?.deliveries.inc({ kind, endpoint: message?.endpoint ?? '', outcome });

  async function deliver(kind: string, job: JobWithMetadata<unknown>): Promise<JobResult> {
    const read = readOutboxEnvelope(job.data);
    // The envelope's key, endpoint and event id fill in what the handler's payload leaves out.
    const parsed = read.ok
      ? messageSchema.safeParse({
          idempotencyKey: read.message.key,
          ...(read.message.endpoint === undefined ? {} : { endpoint: read.message.endpoint }),
          ...(read.message.eventId === undefined ? {} : { eventId: read.message.eventId }),
          ...read.message.payload,
        })
      : null;
    if (!read.ok || !parsed?.success) {
      const issue = parsed?.error?.issues[0];
      const error = !read.ok
        ? read.error
        : `outbox message is malformed at /${issue?.path.join('/') ?? ''}: ${issue?.message ?? 'invalid'}`;
      logger.error({ kind, job_id: job.id, error }, 'relay: malformed outbox message dead-lettered');
      count(kind, null, 'dead');
      return { id: job.id, status: 'deadletter', output: { error } };
    }
    const message = parsed.data;
    const key = message.idempotencyKey;
    const log = {
      kind,
      key,
      endpoint: message.endpoint,
      event_id: message.eventId,
      job_id: job.id,
      trace_id: activeTraceId() ?? traceIdOf(envelopeTraceparent(job.data)),
    };

    if (message.url === null) {
      await recordNowhere(pool, { kind, key, endpoint: message.endpoint ?? null });
      logger.info(log, 'relay: no URL configured; recorded as delivered nowhere');
      count(kind, message, 'nowhere');
      return { id: job.id, status: 'completed', output: { outcome: 'nowhere' } };
    }

    const timeoutMs = Math.min(message.timeoutMs ?? defaultTimeoutMs, maxTimeoutMs);
    const leaseSeconds = timeoutMs / 1000 + 5;
    // This attempt's number: every write that ends it is fenced by it (finishAttempt).
    const attempt = await beginAttempt(pool, {
      kind,
      key,
      endpoint: message.endpoint ?? null,
      url: message.url,
      leaseSeconds,
    });
    if (attempt === null) {
      const status = await deliveryStatus(pool, { kind, key });
      if (status === 'delivered' || status === 'nowhere') {
        logger.info({ ...log, status }, 'relay: already delivered; not sending again');
        count(kind, message, 'duplicate');
        return { id: job.id, status: 'completed', output: { outcome: 'duplicate', previously: status } };
      }
      // Another attempt holds the lease (an expired job running late): try again later.
      count(kind, message, 'retry');
      return { id: job.id, status: 'failed', output: { error: 'another attempt is in flight' } };
    }

    const finish = (status: AttemptResult['status'], httpStatus: number | null, error: string | null) =>
      finishAttempt(pool, { kind, key }, attempt, { status, httpStatus, error });
    const superseded = (outcome: string): JobResult => {
      // Another attempt took the record over after this one's lease ran out (this one stalled):
      // its result is not recorded, and pg-boss ignores this job result too (fenced by retryCount).
      logger.warn({ ...log, attempt, outcome }, 'relay: attempt outlived its lease; result not recorded');
      return {
        id: job.id,
        status: 'failed',
        output: { outcome: 'superseded', error: 'attempt outlived its lease' },
      };
    };

    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'idempotency-key': headerValue(key),
      'user-agent': 'hookgate-relay',
      'x-hookgate-kind': headerValue(kind),
    };
    if (message.endpoint) headers['x-hookgate-endpoint'] = headerValue(message.endpoint);
    if (message.eventId) headers['x-hookgate-event-id'] = headerValue(message.eventId);
    if (message.eventType) headers['x-hookgate-event-type'] = headerValue(message.eventType);
    const to = target(message.url);
    const result: SendResult =
      'problem' in to
        ? { outcome: 'dead', status: null, error: `the request could not be built: ${to.problem}` }
        : await postOnce({
            url: to.url,
            redact: to.redact,
            headers,
            body: JSON.stringify(message.body ?? null),
            timeoutMs,
            signal: AbortSignal.any([job.signal, stopping.signal]),
          });

    if (result.outcome === 'delivered') {
      if (!(await finish('delivered', result.status, null))) {
        logger.info({ ...log, http_status: result.status }, 'relay: delivered (already recorded)');
      } else logger.info({ ...log, http_status: result.status }, 'relay: delivered');
      count(kind, message, 'delivered');
      return { id: job.id, status: 'completed', output: { outcome: 'delivered', status: result.status } };
    }
    if (result.outcome === 'dead') {
      if (!(await finish('dead', result.status, result.error))) return superseded('dead');
      logger.error({ ...log, http_status: result.status, error: result.error }, 'relay: refused; dead');
      count(kind, message, 'dead');
      return { id: job.id, status: 'deadletter', output: { outcome: 'dead', error: result.error } };
    }
    const last = job.retryCount >= job.retryLimit;
    if (!(await finish(last ? 'dead' : 'retrying', result.status, result.error))) {
      return superseded(last ? 'dead' : 'retry');
    }
    if (last) {
      logger.error(
        { ...log, attempts: job.retryCount + 1, error: result.error },
        'relay: retries exhausted; dead',
      );
      count(kind, message, 'dead');
    } else {
      const retryAfter = result.outcome === 'retry' ? result.retryAfterSeconds : undefined;
      if (retryAfter !== undefined && retryAfter > 0) {
        const seconds = Math.min(retryAfter, maxRetryAfterSeconds);
        const output = { outcome: 'retry', error: result.error, retryAfterSeconds: seconds };
        await failNotBefore(pool, boss, outboxQueue(kind), job, output, seconds);
        logger.warn(
          { ...log, attempt: job.retryCount + 1, error: result.error, retry_after_seconds: seconds },
          'relay: delivery refused for now; retrying after the time it asked for',
        );
        count(kind, message, 'retry');
        return { id: job.id, status: 'failed', output };
      }
      logger.warn(
        { ...log, attempt: job.retryCount + 1, error: result.error },
        'relay: delivery failed; retrying',
      );
      count(kind, message, 'retry');
    }
    return {
      id: job.id,
      status: 'failed',
      output: { outcome: last ? 'dead' : 'retry', error: result.error },
    };
  }

  async function settle(kind: string, job: JobWithMetadata<unknown>): Promise<JobResult> {
    const data = (typeof job.data === 'object' ? job.data : null) as Record<string, unknown> | null;
    const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
    // webhook.forward continues the apply's trace (the outbox job carries its traceparent).
    return inSpan(
      'webhook.forward',
      spanAttributes({ kind, endpoint: text(data?.endpoint), event_id: text(data?.eventId), job_id: job.id }),
      async (span) => {
        const result = await settleOnce(kind, job);
        const output = result.output as { outcome?: unknown } | undefined;
        setOutcome(span, typeof output?.outcome === 'string' ? output.outcome : result.status);
        return result;
      },
      contextFromTraceparent(envelopeTraceparent(job.data)),
    );
  }

  async function settleOnce(kind: string, job: JobWithMetadata<unknown>): Promise<JobResult> {
    try {
      return await deliver(kind, job);
    } catch (error) {
      // The record could not be read or written (database trouble): retry the job.
      logger.error({ kind, job_id: job.id, err: error }, 'relay: delivery bookkeeping failed');
      return { id: job.id, status: 'failed', output: { error: (error as Error).message } };
    }
  }

  for (const kind of kinds) {
    await boss.work(
      outboxQueue(kind),
      {
        batchSize: options.batchSize ?? 10,
        localConcurrency: options.concurrency ?? 2,
        pollingIntervalSeconds: options.pollingIntervalSeconds ?? 1,
        includeMetadata: true,
        perJobResults: true,
      },
      async (jobs: JobWithMetadata<unknown>[]) => Promise.all(jobs.map((job) => settle(kind, job))),
    );
  }

  return {
    async stop() {
      const drained = Promise.allSettled(
        kinds.map((kind) => boss.offWork(outboxQueue(kind), { wait: true })),
      );
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => {
        timer = setTimeout(() => resolve('late'), stopTimeoutMs);
      });
      if ((await Promise.race([drained, late])) === 'late') {
        // Abort in-flight requests; their jobs are failed back to retry.
        stopping.abort();
        await drained;
      }
      clearTimeout(timer);
    },
  };
}
