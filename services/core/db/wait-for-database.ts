import type { Logger } from '../logging.ts';
import { isUnreachable } from '../unreachable.ts';

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
