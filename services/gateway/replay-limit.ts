export interface ReplayLimitOptions {
  /** Wrong tokens a source may send per endpoint within `windowMs` before it is refused. */
  readonly maxFailures: number;
  readonly windowMs: number;
  /** Most (source, endpoint) pairs remembered; the least recently failed is forgotten first. */
  readonly maxSources: number;
}

interface Window {
  readonly startedAt: number;
  failures: number;
}

/**
 * Counts wrong replay tokens per source and endpoint over a fixed window, in this process only.
 * Memory is bounded by `maxSources`: a Map keeps insertion order, so re-inserting on every failure
 * makes its first key the least recently failed one, which is evicted when the map is full.
 */
export class ReplayTokenLimiter {
  private readonly windows = new Map<string, Window>();
  private readonly options: ReplayLimitOptions;

  constructor(options: ReplayLimitOptions) {
    this.options = options;
  }

  /** Seconds until this source may try again on this endpoint, or 0 when it may now. */
  retryAfter(source: string, endpoint: string, now: number): number {
    const key = `${endpoint} ${source}`;
    const window = this.windows.get(key);
    if (!window) return 0;
    const endsAt = window.startedAt + this.options.windowMs;
    if (now >= endsAt) {
      this.windows.delete(key);
      return 0;
    }
    return window.failures >= this.options.maxFailures ? Math.ceil((endsAt - now) / 1000) : 0;
  }

  recordFailure(source: string, endpoint: string, now: number): void {
    const key = `${endpoint} ${source}`;
    const current = this.windows.get(key);
    const window =
      current && now < current.startedAt + this.options.windowMs ? current : { startedAt: now, failures: 0 };
    window.failures += 1;
    this.windows.delete(key);
    this.windows.set(key, window);
    if (this.windows.size > this.options.maxSources) {
      const oldest = this.windows.keys().next().value;
      if (oldest !== undefined) this.windows.delete(oldest);
    }
  }

  get size(): number {
    return this.windows.size;
  }
}
