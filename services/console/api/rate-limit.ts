/**
 * Requests per access token, per console replica: a token bucket of `perMinute` requests, refilled
 * evenly over the minute, so a burst of a minute's allowance is let through and then one request
 * every 60/perMinute seconds. One bucket per token name (bounded by the configuration's tokens).
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly perMinute: number;

  constructor(perMinute: number) {
    this.perMinute = perMinute;
  }

  /** Takes one request's token; else how many seconds until one is free. */
  take(
    name: string,
    now: number,
  ): { readonly ok: true } | { readonly ok: false; readonly retryAfterSeconds: number } {
    const bucket = this.buckets.get(name) ?? { tokens: this.perMinute, at: now };
    const refilled = Math.min(this.perMinute, bucket.tokens + ((now - bucket.at) * this.perMinute) / 60_000);
    if (refilled >= 1) {
      this.buckets.set(name, { tokens: refilled - 1, at: now });
      return { ok: true };
    }
    this.buckets.set(name, { tokens: refilled, at: now });
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil(((1 - refilled) * 60) / this.perMinute)) };
  }
}
