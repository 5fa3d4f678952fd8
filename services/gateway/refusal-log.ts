import type { Logger } from '../core/logging.ts';

/** How often the per-outcome counts of refused requests are written, at most. */
export const REFUSAL_LOG_INTERVAL_MS = 10_000;

/**
 * Refused requests are logged sampled: the first of each (endpoint, outcome) in an interval as
 * its own line, the rest as counts in one summary line when the interval ends. A flood of
 * forgeries or garbage writes a few lines per interval instead of one per request.
 */
export class RefusalLog {
  private readonly counts = new Map<string, { endpoint: string; outcome: string; count: number }>();
  private timer: NodeJS.Timeout | null = null;

  private readonly logger: Logger;
  private readonly intervalMs: number;

  constructor(logger: Logger, intervalMs = REFUSAL_LOG_INTERVAL_MS) {
    this.logger = logger;
    this.intervalMs = intervalMs;
  }

  record(line: Readonly<Record<string, unknown>> & { endpoint: string; outcome: string }): void {
    const key = `${line.endpoint}\u0000${line.outcome}`;
    const seen = this.counts.get(key);
    if (seen) {
      seen.count += 1;
      this.logger.debug(line, 'delivery answered');
      return;
    }
    this.counts.set(key, { endpoint: line.endpoint, outcome: line.outcome, count: 1 });
    this.logger.info({ ...line, sampled: true }, 'delivery answered');
    this.timer ??= setTimeout(() => this.flush(), this.intervalMs).unref();
  }

  /** Writes the summary of the current interval (only what went beyond the sampled lines). */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const refused = [...this.counts.values()].filter((entry) => entry.count > 1);
    this.counts.clear();
    if (refused.length === 0) return;
    this.logger.info(
      { refused, interval_ms: this.intervalMs },
      'requests refused (counts per endpoint and outcome, sampled lines included)',
    );
  }
}
