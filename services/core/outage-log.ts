import type { Logger } from './logging.ts';
import { isUnreachable } from './unreachable.ts';

/** How often a summary is written while the database stays unreachable. */
export const OUTAGE_SUMMARY_MS = 30_000;

/** Also "the database is not there": pg-pool's wait for a connection that never comes. */
const CONNECT_TIMEOUT = /timeout exceeded when trying to connect|Connection terminated/i;

export function databaseUnreachableError(error: unknown): boolean {
  if (isUnreachable(error)) return true;
  // pg-boss emits its loops' errors as plain objects ({ ...error, message, stack, queue }): the
  // message is what is left of a connection dropped without a code.
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' && CONNECT_TIMEOUT.test(message);
}

/**
 * While PostgreSQL is unreachable every loop of a process fails every second or so: written
 * line by line, that is ten error lines per second per process saying the same thing. This log
 * writes one line when the database becomes unreachable, a summary every `summaryEveryMs` while it
 * stays so (how long, how many failures, by source), and one line when it is back. Errors that are
 * not about reaching the database are left to their callers to log.
 */
export class OutageLog {
  private readonly logger: Logger;
  private readonly where: string;
  private readonly summaryEveryMs: number;
  private readonly now: () => number;
  private downSince: number | null = null;
  private failures = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private silent = false;
  private seen = 0;

  constructor(logger: Logger, options: { where: string; summaryEveryMs?: number; now?: () => number }) {
    this.logger = logger;
    this.where = options.where;
    this.summaryEveryMs = options.summaryEveryMs ?? OUTAGE_SUMMARY_MS;
    this.now = options.now ?? Date.now;
  }

  get down(): boolean {
    return this.downSince !== null;
  }

  /**
   * How many failures to reach the database this log has counted, ever: a loop whose step handles
   * some of its own failures compares it before and after, and reports a recovery only when its
   * step saw none (a step that fetched before a cut and failed after it reached nothing).
   */
  get failuresSeen(): number {
    return this.seen;
  }

  /**
   * Reports a failure of `source` (a loop, the queue, readiness). Returns true when it was the
   * database being unreachable (counted here; the caller logs nothing), false otherwise.
   */
  failed(source: string, error: unknown): boolean {
    if (!databaseUnreachableError(error)) return false;
    this.seen += 1;
    this.failures.set(source, (this.failures.get(source) ?? 0) + 1);
    if (this.downSince === null) {
      this.downSince = this.now();
      if (this.silent) return true;
      this.logger.error(
        { database: this.where, source, err: error },
        `PostgreSQL at ${this.where} is unreachable; retrying (one summary every ${Math.round(this.summaryEveryMs / 1000)}s until it is back)`,
      );
      this.timer = setInterval(() => this.summary(), this.summaryEveryMs);
      this.timer.unref();
    }
    return true;
  }

  /**
   * The process was interrupted together with its database (Ctrl-C reaches the embedded
   * PostgreSQL too): failures to reach it from here on are expected and counted, not written.
   */
  quiet(): void {
    this.silent = true;
    this.stop();
  }

  /** Something reached the database: ends an outage, if there was one. */
  recovered(): void {
    if (this.downSince === null) return;
    const downForMs = this.now() - this.downSince;
    this.logger.info(
      { database: this.where, down_for_ms: downForMs, failures: this.counts() },
      `PostgreSQL at ${this.where} is reachable again`,
    );
    this.stop();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.downSince = null;
    this.failures = new Map();
  }

  private summary(): void {
    if (this.downSince === null || this.silent) return;
    this.logger.warn(
      { database: this.where, down_for_ms: this.now() - this.downSince, failures: this.counts() },
      `PostgreSQL at ${this.where} is still unreachable`,
    );
  }

  private counts(): Record<string, number> {
    return Object.fromEntries(this.failures);
  }
}
