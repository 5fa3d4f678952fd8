import { z } from 'zod';
import { durationMs } from '../../core/config/duration.ts';
import { createPool } from '../../core/db/pool.ts';
import { prune } from '../../core/inbox/prune.ts';
import { createLogger } from '../../core/logging.ts';
import { openDatabase } from '../database.ts';

const DAY = 86_400_000;

export const pruneOptionsSchema = z.strictObject({
  /** Never below 3 days: Stripe retries for 3 days, and a pruned id is no longer deduplicated. */
  olderThan: durationMs.pipe(z.number().min(3 * DAY, 'must be at least 3d (provider retry windows)')),
  outboxOlderThan: durationMs.pipe(z.number().min(3 * DAY, 'must be at least 3d')),
  chunk: z.coerce.number().int().min(100).max(100_000),
});

/** `hookgate prune`: retention for settled inbox rows and settled downstream deliveries. */
export async function pruneCommand(raw: unknown): Promise<void> {
  const options = pruneOptionsSchema.parse(raw);
  const logger = createLogger('warn');
  const database = await openDatabase(logger);
  const pool = createPool({
    connectionString: database.url,
    max: 1,
    statementTimeoutMs: 300_000,
    connectTimeoutMs: 5_000,
    applicationName: 'hookgate-prune',
  });
  try {
    const report = await prune(pool, {
      inboxOlderThanMs: options.olderThan,
      deliveriesOlderThanMs: options.outboxOlderThan,
      chunk: options.chunk,
    });
    process.stdout.write(
      `${JSON.stringify({ deleted_inbox_rows: report.inboxRows, deleted_deliveries: report.deliveries })}\n`,
    );
  } finally {
    await pool.end();
    await database.embedded?.stop();
  }
}
