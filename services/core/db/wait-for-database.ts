import type { Logger } from '../logging.ts';

/** SQLSTATEs that say "not now" rather than "never": the server is starting, stopping or full. */
const TRANSIENT_STATES = new Set(['57P01', '57P02', '57P03', '53300']);

/** Network errors that say the server is not reachable yet (DNS included: CoreDNS may lag). */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);

/**
 * Whether an error from a first query means the database cannot be reached yet (down,
 * restarting, not resolvable yet, refusing connections while it starts), as opposed to a
 * refusal that waiting will not change (a wrong password, a missing database).
 */
export function isUnreachable(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') {
      if (NETWORK_CODES.has(code)) return true;
      if (code.startsWith('08') || TRANSIENT_STATES.has(code)) return true;
      return false;
    }
    if (current instanceof AggregateError && current.errors.length > 0) current = current.errors[0];
    else current = (current as { cause?: unknown }).cause;
  }
  // node-postgres reports a connection dropped during start-up without a code.
  return error instanceof Error && /Connection terminated|timeout expired/i.test(error.message);
}

export interface WaitOptions {
  /** Longest to keep trying; 0 tries once. */
  readonly timeoutMs: number;
  readonly logger: Logger;
  /** Where the database is, for the log (host and port, never credentials). */
  readonly where: string;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly now?: () => number;
}

/**
 * Runs `attempt` until it succeeds, retrying while the database is unreachable, with a backoff
 * from 250 ms to 5 s, for at most `timeoutMs`; then throws the last error. A process started
 * while PostgreSQL is down (a node restart, a failover, a cluster coming up in any order) waits
 * for it instead of exiting into a crash loop whose backoff outlasts the outage.
 */
export async function untilReachable<T>(attempt: () => Promise<T>, options: WaitOptions): Promise<T> {
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const now = options.now ?? Date.now;
  const deadline = now() + options.timeoutMs;
  let delay = 250;
  for (let tries = 1; ; tries += 1) {
    try {
      return await attempt();
    } catch (error) {
      const left = deadline - now();
      if (!isUnreachable(error) || left <= 0) throw error;
      const wait = Math.min(delay, left);
      options.logger.warn(
        { err: error, tries, retry_in_ms: wait, gives_up_in_ms: left },
        `PostgreSQL at ${options.where} is not reachable yet; waiting for it`,
      );
      await sleep(wait);
      delay = Math.min(delay * 2, 5_000);
    }
  }
}
