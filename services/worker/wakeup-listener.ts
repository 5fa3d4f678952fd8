import pg from 'pg';
import type { Logger } from '../core/logging.ts';
import { WAKEUP_CHANNEL } from '../core/queue/wakeup.ts';

const RECONNECT_MS = 2_000;

/**
 * Holds one connection that LISTENs for claim wake-ups and calls `wake(endpoint)` for each.
 * If the connection drops it reconnects; meanwhile the loops' polling covers the gap, so a
 * missed wake-up only costs latency, never an event.
 */
export function listenForWakeups(
  config: pg.ClientConfig,
  wake: (endpoint: string) => void,
  logger: Logger,
): { stop(): Promise<void> } {
  let client: pg.Client | null = null;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  // Logged when it changes, not on every reconnect attempt (one each RECONNECT_MS while down).
  let failing = false;

  const connect = async (): Promise<void> => {
    if (stopped) return;
    const next = new pg.Client({ ...config, application_name: 'hookgate-worker-listen' });
    next.on('notification', (message) => {
      if (message.channel === WAKEUP_CHANNEL && message.payload) wake(message.payload);
    });
    next.on('error', (error) => {
      if (!failing)
        logger.warn({ err: error }, 'wake-up listener lost its connection; polling until it is back');
      failing = true;
      void next.end().catch(() => {});
      if (client === next) client = null;
      schedule();
    });
    try {
      await next.connect();
      await next.query(`LISTEN ${WAKEUP_CHANNEL}`);
      if (stopped) {
        await next.end();
        return;
      }
      client = next;
      if (failing) logger.info('wake-up listener is listening again');
      failing = false;
    } catch (error) {
      if (!failing) logger.warn({ err: error }, 'wake-up listener could not connect; polling until it can');
      else logger.debug({ err: error }, 'wake-up listener could not connect yet');
      failing = true;
      void next.end().catch(() => {});
      schedule();
    }
  };
  const schedule = () => {
    if (stopped || retry) return;
    retry = setTimeout(() => {
      retry = undefined;
      void connect();
    }, RECONNECT_MS);
  };
  void connect();

  return {
    async stop() {
      stopped = true;
      clearTimeout(retry);
      await client?.end().catch(() => {});
      client = null;
    },
  };
}
