import type pg from 'pg';
import { type FinishedAttempt, finishAttempts } from '../core/destinations/deliveries.ts';

// The relay's attempt records, group-committed: an attempt that ends while a write is in flight
// waits for the next one, which takes everything that ended meanwhile, so a busy relay writes
// one statement for many deliveries instead of one each. One attempt's record can never fail
// another's: when a statement fails, each of its attempts is written alone, and an attempt whose
// own record still fails is written with a minimal record (its status and code, none of the
// receiver's text or bytes), which the caller counts as a bookkeeping failure.

/** Most attempts one statement records. */
const MAX_BATCH = 500;

/** How an attempt's record went. */
export interface Recorded {
  /** Its delivery row was written (false: fenced out, the attempt outlived its lease). */
  readonly written: boolean;
  /** Null, or why its full record could not be written (a minimal one was written instead). */
  readonly failure: string | null;
}

interface Waiting {
  readonly attempt: FinishedAttempt;
  resolve(recorded: Recorded): void;
  reject(error: unknown): void;
}

export interface Finisher {
  /**
   * Records the attempt. Rejects only when not even its minimal record could be written (the
   * database is unreachable, say): the delivery's lease runs out, and the claim that takes it up
   * again records the attempt as unrecorded and counts it against the retry limit.
   */
  finish(attempt: FinishedAttempt): Promise<Recorded>;
}

const describe = (error: unknown): string => {
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  return typeof code === 'string' ? `${code}: ${message}` : message;
};

/** The record of an attempt whose full record failed: what happened, nothing the receiver sent. */
export function minimalRecord(attempt: FinishedAttempt, failure: string): FinishedAttempt {
  const code = /^([0-9A-Z]{5}):/.exec(failure)?.[1];
  return {
    ...attempt,
    error: `${attempt.httpStatus === null ? 'failed' : `HTTP ${attempt.httpStatus}`}; the attempt's full record could not be written${code ? ` (SQLSTATE ${code})` : ''}, so the answer is not kept`,
    responseHead: null,
    responseBytes: null,
    responseHeaders: null,
  };
}

export function createFinisher(pool: pg.Pool, now: () => Date | null = () => null): Finisher {
  const queue: Waiting[] = [];
  let running = false;

  async function minimal(item: Waiting, error: unknown): Promise<void> {
    const failure = describe(error);
    try {
      const written = await finishAttempts(pool, [minimalRecord(item.attempt, failure)], now());
      item.resolve({ written: written.has(item.attempt.id), failure });
    } catch (again) {
      item.reject(again);
    }
  }

  async function alone(item: Waiting): Promise<void> {
    try {
      const written = await finishAttempts(pool, [item.attempt], now());
      item.resolve({ written: written.has(item.attempt.id), failure: null });
    } catch (error) {
      await minimal(item, error);
    }
  }

  async function drain(): Promise<void> {
    running = true;
    try {
      while (queue.length > 0) {
        // One attempt per delivery per statement: a second (a late one, fenced out) waits a turn.
        const batch: Waiting[] = [];
        const later: Waiting[] = [];
        const ids = new Set<string>();
        for (const item of queue.splice(0, MAX_BATCH)) {
          if (ids.has(item.attempt.id)) later.push(item);
          else {
            ids.add(item.attempt.id);
            batch.push(item);
          }
        }
        queue.unshift(...later);
        try {
          const written = await finishAttempts(
            pool,
            batch.map((item) => item.attempt),
            now(),
          );
          for (const item of batch) item.resolve({ written: written.has(item.attempt.id), failure: null });
        } catch (error) {
          // Which one failed the statement is not said: each is written on its own.
          if (batch.length === 1) await minimal(batch[0]!, error);
          else for (const item of batch) await alone(item);
        }
      }
    } finally {
      running = false;
    }
  }

  return {
    finish(attempt) {
      return new Promise<Recorded>((resolve, reject) => {
        queue.push({ attempt, resolve, reject });
        if (!running) void drain();
      });
    },
  };
}
