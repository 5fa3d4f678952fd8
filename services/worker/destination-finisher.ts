import type pg from 'pg';
import { type FinishedAttempt, finishAttempts } from '../core/destinations/deliveries.ts';

// The relay's attempt records, group-committed: an attempt that ends while a write is in flight
// waits for the next one, which takes everything that ended meanwhile, so a busy relay writes
// one statement for many deliveries instead of one each.

/** Most attempts one statement records. */
const MAX_BATCH = 500;

interface Waiting {
  readonly attempt: FinishedAttempt;
  resolve(written: boolean): void;
  reject(error: unknown): void;
}

export interface Finisher {
  /** Records the attempt; resolves with whether its row was written (false: fenced out). */
  finish(attempt: FinishedAttempt): Promise<boolean>;
}

export function createFinisher(pool: pg.Pool): Finisher {
  const queue: Waiting[] = [];
  let running = false;

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
          );
          for (const item of batch) item.resolve(written.has(item.attempt.id));
        } catch (error) {
          for (const item of batch) item.reject(error);
        }
      }
    } finally {
      running = false;
    }
  }

  return {
    finish(attempt) {
      return new Promise<boolean>((resolve, reject) => {
        queue.push({ attempt, resolve, reject });
        if (!running) void drain();
      });
    },
  };
}
