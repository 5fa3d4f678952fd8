import type pg from 'pg';

// A clock a test moves by hand, for the statements that take their `now` from the caller (the
// destinations' leases, due times, breaker and rate limit: `now` of the relay's options). It
// starts at the database's own time, so that rows the database stamped before it (an apply's
// deliveries, due at their insert) are due; a row stamped later is due once the clock passes it.

export class DrivenClock {
  private at: number;

  private constructor(at: number) {
    this.at = at;
  }

  /** Starts at the database's clock_timestamp(), plus `aheadMs`. */
  static async fromDatabase(pool: Pick<pg.Pool, 'query'>, aheadMs = 0): Promise<DrivenClock> {
    const { rows } = await pool.query<{ now: Date }>('SELECT clock_timestamp() AS now');
    return new DrivenClock(rows[0]!.now.getTime() + aheadMs);
  }

  /** For the relay's `now` option. */
  readonly now = (): Date => new Date(this.at);

  advance(ms: number): void {
    this.at += ms;
  }

  /** To a time of the test's choosing (`from` plus `ms`): a deadline's last millisecond, say. */
  setTo(from: Date, ms = 0): void {
    this.at = from.getTime() + ms;
  }

  /** Milliseconds since `from` (a time this clock gave). */
  since(from: Date): number {
    return this.at - from.getTime();
  }
}
