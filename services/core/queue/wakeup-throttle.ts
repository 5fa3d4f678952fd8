/**
 * How often the gateway wakes the workers. A claim's `pg_notify` takes a cluster-wide lock that
 * PostgreSQL holds until the claim's commit has been flushed (it keeps the notification queue
 * in commit order), so claims that all notify commit one after another, each waiting for the
 * flush of the one before. Under load one wake-up per endpoint every `intervalMs` is enough: a
 * claim carries the wake-up when the endpoint's last one is older than that; a claim that does
 * not is followed, at most `intervalMs` after the last wake-up, by one sent on its own. So
 * every committed event is still announced, at most `intervalMs` later than before; polling
 * remains the fallback for wake-ups that are lost (a dropped listener connection).
 */
export interface WakeupThrottleOptions {
  /** Least time between two wake-ups for one endpoint; 0 wakes with every claim. */
  readonly intervalMs: number;
  /** Sends a wake-up for these endpoints on its own (autocommitted `pg_notify`). */
  readonly send: (endpoints: readonly string[]) => Promise<void>;
  /** Told when a wake-up sent on its own failed (the workers' polling covers it). */
  readonly onError?: (error: unknown) => void;
  readonly now?: () => number;
}

export class WakeupThrottle {
  readonly #options: WakeupThrottleOptions;
  readonly #now: () => number;
  /** When each endpoint's last wake-up was sent (with a claim, or on its own). */
  readonly #last = new Map<string, number>();
  /** Endpoints with committed events that no wake-up has announced yet. */
  readonly #owed = new Set<string>();
  #timer: NodeJS.Timeout | undefined;
  #sending: Promise<void> = Promise.resolve();

  constructor(options: WakeupThrottleOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => performance.now());
  }

  /**
   * Before a claim of events for these endpoints: true if the claim should carry the wake-up
   * (then it counts as sent now), false if a recent one covers them and owe() follows the commit.
   */
  take(endpoints: Iterable<string>): boolean {
    const now = this.#now();
    const names = [...endpoints];
    const due = names.some(
      (name) => now - (this.#last.get(name) ?? Number.NEGATIVE_INFINITY) >= this.#options.intervalMs,
    );
    if (!due) return false;
    // What is owed stays owed: this claim may yet fail and send nothing. At worst one wake-up
    // too many per interval.
    for (const name of names) this.#last.set(name, now);
    return true;
  }

  /** After a claim committed events for these endpoints without a wake-up: one follows soon. */
  owe(endpoints: Iterable<string>): void {
    for (const name of endpoints) this.#owed.add(name);
    this.#arm();
  }

  /** Sends what is owed now (at shutdown: the workers should not wait for their polling). */
  async flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#sendOwed();
    await this.#sending;
  }

  #arm(): void {
    if (this.#timer || this.#owed.size === 0) return;
    const now = this.#now();
    let wait = 0;
    for (const name of this.#owed) {
      const last = this.#last.get(name) ?? Number.NEGATIVE_INFINITY;
      wait = Math.max(wait, last + this.#options.intervalMs - now);
    }
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        void this.#sendOwed();
      },
      Math.max(0, Math.ceil(wait)),
    );
  }

  #sendOwed(): Promise<void> {
    if (this.#owed.size === 0) return this.#sending;
    const names = [...this.#owed].sort();
    this.#owed.clear();
    const now = this.#now();
    for (const name of names) this.#last.set(name, now);
    this.#sending = this.#sending
      .then(() => this.#options.send(names))
      .catch((error: unknown) => this.#options.onError?.(error));
    return this.#sending;
  }
}
