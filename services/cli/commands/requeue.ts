import { z } from 'zod';
import { loadConfig } from '../../core/config/load.ts';
import { createPool } from '../../core/db/pool.ts';
import { HookgateError } from '../../core/errors.ts';
import { requeue, requeueOrphans } from '../../core/inbox/requeue.ts';
import { createLogger } from '../../core/logging.ts';
import { createBoss } from '../../core/queue/boss.ts';
import { ensureQueues, outboxPolicyFrom, retryPolicyFrom } from '../../core/queue/queues.ts';
import { openDatabase } from '../database.ts';

export const requeueOptionsSchema = z.strictObject({
  endpoint: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, 'is not an endpoint name'),
  status: z.enum(['parked', 'dead']).optional(),
  eventId: z.string().min(1).max(512).optional(),
  orphans: z.boolean().optional(),
  config: z.string().min(1),
});

/** `hookgate requeue`: parked/dead events back to pending with a fresh job each. */
export async function requeueCommand(raw: unknown): Promise<void> {
  const options = requeueOptionsSchema.parse(raw);
  const logger = createLogger();
  const config = loadConfig(options.config);
  if (!config.endpoints[options.endpoint]) {
    throw new HookgateError('endpoint_unknown', `No endpoint named ${options.endpoint} is configured.`);
  }
  const database = await openDatabase(logger);
  const pool = createPool({
    connectionString: database.url,
    max: 2,
    statementTimeoutMs: 60_000,
    connectTimeoutMs: config.database.connectTimeout,
    applicationName: 'hookgate-requeue',
  });
  const boss = createBoss({
    connectionString: database.url,
    max: 2,
    supervise: false,
    applicationName: 'hookgate-requeue',
  });
  boss.on('error', (error) => logger.error({ err: error }, 'queue error'));
  try {
    await boss.start();
    await ensureQueues(
      boss,
      [options.endpoint],
      retryPolicyFrom(config.worker),
      outboxPolicyFrom(config.relay),
    );
    const statuses = options.status ? [options.status] : (['parked', 'dead'] as const);
    const ids = options.orphans
      ? await requeueOrphans(pool, boss, options.endpoint)
      : await requeue(pool, boss, { endpoint: options.endpoint, statuses, eventId: options.eventId });
    process.stdout.write(
      `${JSON.stringify({ endpoint: options.endpoint, requeued: ids.length, event_ids: ids.slice(0, 100) })}\n`,
    );
  } finally {
    await boss.stop({ graceful: false, close: true });
    await pool.end();
    await database.embedded?.stop();
  }
}
