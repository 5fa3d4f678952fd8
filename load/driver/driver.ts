// hookgate's own load driver: the k6 scripts' mix (same modules), open-model arrivals evenly
// spaced at a constant rate (arrival i leaves at start + i/rate, whether or not earlier ones
// were answered), bounded in time and in count. Each 2xx becomes one JSON line for
// `hookgate verify --sent`. Used by the smoke test in `make test` and by `make bench`.
import { createWriteStream, type WriteStream } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import {
  ackRecord,
  type MixSettings,
  type ProviderName,
  planArrival,
  type Run,
  type Step,
  type StepKind,
  signEvent,
} from '../lib/mix.ts';
import { nodeHmac } from './node-hmac.ts';

export interface DriverTarget {
  readonly endpoint: string;
  readonly provider: ProviderName;
  readonly secret: string;
}

/** The driver's schedule clock: monotonic milliseconds, and a sleep on the same clock. */
export interface DriverClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

const REAL_CLOCK: DriverClock = { now: () => performance.now(), sleep: (ms) => sleep(ms) };

export interface DriverOptions {
  /** e.g. http://127.0.0.1:8080 */
  readonly baseUrl: string;
  /** Arrivals go round-robin over the targets, each with its own run of the mix. */
  readonly targets: readonly DriverTarget[];
  /** Arrivals per second over all targets. */
  readonly rate: number;
  readonly seconds: number;
  /** At most this many arrivals (the time bound may end the run first). */
  readonly maxArrivals?: number;
  /** No arrival after this is aborted (a caller that ends the run once it has seen enough). */
  readonly stop?: AbortSignal;
  readonly connections: number;
  /** Requests allowed in flight; an arrival beyond it is dropped and counted, never queued. */
  readonly maxInFlight: number;
  readonly requestTimeoutMs: number;
  readonly mix: MixSettings;
  readonly run: Run;
  /** JSON lines, one per acknowledged delivery. */
  readonly recordTo?: string;
  /** Called for every request once answered (status null: no answer), e.g. to place it in time. */
  readonly onAnswer?: (answer: DriverAnswer) => void;
  /** The schedule's clock (default: the process's); a test drives one to check the schedule itself. */
  readonly clock?: DriverClock;
}

export interface DriverAnswer {
  readonly endpoint: string;
  readonly eventId: string;
  readonly status: number | null;
  /** Wall-clock milliseconds (Date.now()) when the request left and when its answer was read. */
  readonly sentAt: number;
  readonly answeredAt: number;
  /** When the arrival was due and when it left, on the schedule's clock, from the run's start (ms). */
  readonly dueMs: number;
  readonly leftMs: number;
}

export interface DriverResult {
  readonly arrivals: number;
  readonly dropped: number;
  readonly requests: number;
  readonly acked: number;
  readonly non2xx: number;
  readonly errors: number;
  /** Arrivals by kind (a concurrent duplicate is one arrival of two requests). */
  readonly kinds: Readonly<Record<StepKind, number>>;
  readonly statuses: Readonly<Record<string, number>>;
  readonly firstFailure: string | null;
  readonly durationSeconds: number;
  readonly targetRate: number;
  /** Arrivals sent per second of the sending window. */
  readonly achievedRate: number;
  readonly ackP50Ms: number;
  readonly ackP99Ms: number;
  readonly ackMaxMs: number;
  /** How late arrivals left against their schedule (the driver's own accuracy), p99. */
  readonly scheduleLagP99Ms: number;
}

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export async function drive(options: DriverOptions): Promise<DriverResult> {
  if (options.targets.length === 0) throw new Error('the driver needs at least one target');
  if (!(options.rate > 0)) throw new Error('rate must be positive');
  const origin = new URL(options.baseUrl).origin;
  const basePath = new URL(options.baseUrl).pathname.replace(/\/+$/, '');
  const pool = new Pool(origin, {
    connections: options.connections,
    headersTimeout: options.requestTimeoutMs,
    bodyTimeout: options.requestTimeoutMs,
    keepAliveTimeout: 10_000,
  });
  const out: WriteStream | null = options.recordTo
    ? createWriteStream(options.recordTo, { flags: 'w' })
    : null;
  const total = Math.min(
    Math.floor(options.rate * options.seconds),
    options.maxArrivals ?? Number.POSITIVE_INFINITY,
  );
  const interval = 1000 / options.rate;
  const kinds: Record<StepKind, number> = { unique: 0, 'later-duplicate': 0, 'concurrent-duplicate': 0 };
  const statuses: Record<string, number> = {};
  const latencies: number[] = [];
  const lags: number[] = [];
  const inFlight = new Set<Promise<void>>();
  let requests = 0;
  let acked = 0;
  let non2xx = 0;
  let errors = 0;
  let dropped = 0;
  let firstFailure: string | null = null;

  const clock = options.clock ?? REAL_CLOCK;
  const send = async (target: DriverTarget, step: Step, dueMs: number): Promise<void> => {
    const started = performance.now();
    const sentAt = Date.now();
    const leftMs = clock.now() - start;
    requests += 1;
    try {
      const response = await pool.request({
        path: `${basePath}/webhooks/${target.endpoint}`,
        method: 'POST',
        headers: signEvent(
          target.provider,
          nodeHmac,
          target.secret,
          step.event,
          Math.floor(Date.now() / 1000),
        ),
        body: step.event.body,
      });
      const text = await response.body.text();
      latencies.push(performance.now() - started);
      options.onAnswer?.({
        endpoint: target.endpoint,
        eventId: step.event.id,
        status: response.statusCode,
        sentAt,
        answeredAt: Date.now(),
        dueMs,
        leftMs,
      });
      statuses[response.statusCode] = (statuses[response.statusCode] ?? 0) + 1;
      if (response.statusCode >= 200 && response.statusCode < 300) {
        acked += 1;
        out?.write(
          `${JSON.stringify(ackRecord(target.endpoint, target.provider, step, response.statusCode))}\n`,
        );
      } else {
        non2xx += 1;
        firstFailure ??= `${target.endpoint} ${step.event.id}: HTTP ${response.statusCode} ${text.slice(0, 200)}`;
      }
    } catch (error) {
      errors += 1;
      options.onAnswer?.({
        endpoint: target.endpoint,
        eventId: step.event.id,
        status: null,
        sentAt,
        answeredAt: Date.now(),
        dueMs,
        leftMs,
      });
      firstFailure ??= `${target.endpoint} ${step.event.id}: ${error instanceof Error ? error.message : String(error)}`;
    }
  };

  const start = clock.now();
  let next = 0;
  try {
    while (next < total && !options.stop?.aborted) {
      const now = clock.now();
      // Everything due by now leaves now; then sleep until the next arrival is due.
      while (next < total && start + next * interval <= now) {
        lags.push(now - (start + next * interval));
        const { target, step } = planArrival(options.targets, options.run, next, options.mix);
        next += 1;
        kinds[step.kind] += 1;
        if (inFlight.size + step.copies > options.maxInFlight) {
          dropped += 1;
          continue;
        }
        for (let copy = 0; copy < step.copies; copy += 1) {
          const pending: Promise<void> = send(target, step, (next - 1) * interval).finally(() =>
            inFlight.delete(pending),
          );
          inFlight.add(pending);
        }
      }
      // At most 100 ms, so that a stop is seen soon at any rate.
      if (next < total) await clock.sleep(Math.min(100, Math.max(0, start + next * interval - clock.now())));
    }
    const sentFor = (clock.now() - start) / 1000;
    await Promise.all(inFlight);
    const durationSeconds = (clock.now() - start) / 1000;
    return {
      arrivals: next,
      dropped,
      requests,
      acked,
      non2xx,
      errors,
      kinds,
      statuses,
      firstFailure,
      durationSeconds,
      targetRate: options.rate,
      achievedRate: (next - dropped) / Math.max(sentFor, interval / 1000),
      ackP50Ms: percentile(latencies, 50),
      ackP99Ms: percentile(latencies, 99),
      ackMaxMs: percentile(latencies, 100),
      scheduleLagP99Ms: percentile(lags, 99),
    };
  } finally {
    await pool.close();
    if (out)
      await new Promise<void>((resolve, reject) =>
        out.end((error?: Error | null) => (error ? reject(error) : resolve())),
      );
  }
}
