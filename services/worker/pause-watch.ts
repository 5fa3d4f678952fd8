import type { Queryable } from '../core/db/pool.ts';
import { pausedEndpoints } from '../core/pause/pause.ts';

/**
 * Which endpoints are paused, as a worker process's loops ask before each fetch: one small query
 * per `ttlMs` for every loop of the process (concurrent askers share it). A paused endpoint's jobs
 * are not fetched, so they wait in their order and no attempt is counted; the apply transaction's
 * fence (services/core/pause/pause.ts) covers the moment between a pause and this reading.
 */
export class PauseWatch {
  readonly #db: Queryable;
  readonly #ttlMs: number;
  readonly #now: () => number;
  #reading: { at: number; paused: Set<string> } | null = null;
  #inFlight: Promise<Set<string>> | null = null;

  constructor(db: Queryable, ttlMs = 1_000, now: () => number = Date.now) {
    this.#db = db;
    this.#ttlMs = ttlMs;
    this.#now = now;
  }

  async paused(endpoint: string): Promise<boolean> {
    return (await this.#read()).has(endpoint);
  }

  async #read(): Promise<Set<string>> {
    if (this.#reading && this.#now() - this.#reading.at < this.#ttlMs) return this.#reading.paused;
    this.#inFlight ??= pausedEndpoints(this.#db)
      .then((rows) => {
        const paused = new Set(rows.map((row) => row.endpoint));
        this.#reading = { at: this.#now(), paused };
        return paused;
      })
      .finally(() => {
        this.#inFlight = null;
      });
    try {
      return await this.#inFlight;
    } catch {
      // The database is unreachable: the fetch that follows fails too; the fence still holds.
      return this.#reading?.paused ?? new Set();
    }
  }
}
