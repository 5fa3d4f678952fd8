/**
 * Failed sign-ins, counted per source address and per (source, user name) in this process. Past
 * `maxFailures` failures a key must wait before its next attempt, twice as long after each further
 * failure (from `baseDelayMs`, at most `maxDelayMs`); an attempt made while waiting is refused
 * without checking the password. A key is forgotten `windowMs` after its last failure, or (per
 * user) when that user signs in. Each replica counts its own attempts.
 */
export interface LoginLimits {
  readonly maxFailures: number;
  readonly windowMs: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  /** Keys remembered; past this the oldest is forgotten first (bounds memory under a spray). */
  readonly maxKeys: number;
}

interface Entry {
  failures: number;
  lastFailure: number;
  blockedUntil: number;
}

// A source may try several names; it gets this many times a single name's allowance.
const SOURCE_FACTOR = 4;

export class LoginLimiter {
  private readonly entries = new Map<string, Entry>();
  private readonly limits: LoginLimits;

  constructor(limits: LoginLimits) {
    this.limits = limits;
  }

  private keys(source: string, user: string): Array<{ key: string; allowance: number }> {
    return [
      { key: `s\0${source}`, allowance: this.limits.maxFailures * SOURCE_FACTOR },
      { key: `u\0${source}\0${user.toLowerCase()}`, allowance: this.limits.maxFailures },
    ];
  }

  private live(key: string, now: number): Entry | undefined {
    const entry = this.entries.get(key);
    if (entry && now - entry.lastFailure > this.limits.windowMs && now >= entry.blockedUntil) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }

  /** Milliseconds until this source may try this name again (0: now). */
  waitMs(source: string, user: string, now: number): number {
    let wait = 0;
    for (const { key } of this.keys(source, user)) {
      const entry = this.live(key, now);
      if (entry) wait = Math.max(wait, entry.blockedUntil - now);
    }
    return Math.max(0, wait);
  }

  failed(source: string, user: string, now: number): void {
    for (const { key, allowance } of this.keys(source, user)) {
      const entry = this.live(key, now) ?? { failures: 0, lastFailure: now, blockedUntil: 0 };
      entry.failures += 1;
      entry.lastFailure = now;
      if (entry.failures >= allowance) {
        const doublings = Math.min(entry.failures - allowance, 20);
        entry.blockedUntil = now + Math.min(this.limits.maxDelayMs, this.limits.baseDelayMs * 2 ** doublings);
      }
      this.entries.delete(key);
      this.entries.set(key, entry);
    }
    while (this.entries.size > this.limits.maxKeys) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }

  succeeded(source: string, user: string): void {
    this.entries.delete(`u\0${source}\0${user.toLowerCase()}`);
  }
}
