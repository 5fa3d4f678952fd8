import { isIPv4, isIPv6 } from 'node:net';

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

/**
 * The source a request is counted under. With `trustedHops` = 0 it is the socket's peer (behind
 * an ingress, that is the ingress). With n > 0, the n-th X-Forwarded-For entry from the right:
 * each trusted proxy appends the address it saw, so entries further left are the client's own
 * words and never trusted. IPv6 sources count per /64, which one host usually holds whole.
 */
export function sourceOf(
  remoteAddress: string | undefined,
  forwardedFor: string | undefined,
  trustedHops: number,
): string {
  let address = remoteAddress ?? '';
  if (trustedHops > 0 && forwardedFor) {
    const hops = forwardedFor.split(',');
    // Fewer entries than trusted hops: the farthest one there is (what the nearest proxy saw).
    const entry = hops[Math.max(0, hops.length - trustedHops)]?.trim() ?? '';
    if (isIPv4(entry) || isIPv6(entry)) address = entry;
  }
  return normalize(address);
}

function normalize(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!isIPv6(address)) return address;
  // Expand `::`, then keep the first four groups (the /64).
  const [head = '', tail = ''] = address.split('%')[0]!.split('::');
  const left = head ? head.split(':') : [];
  const right = address.includes('::') && tail ? tail.split(':') : [];
  const groups = address.includes('::')
    ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right]
    : left;
  return `${groups
    .slice(0, 4)
    .map((group) => Number.parseInt(group, 16).toString(16))
    .join(':')}::/64`;
}
