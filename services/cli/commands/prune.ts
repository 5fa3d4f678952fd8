import { z } from 'zod';
import { durationMs } from '../../core/config/duration.ts';
import { prune } from '../../core/inbox/prune.ts';
import { withCommandPool } from '../database.ts';

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
  await withCommandPool('prune', 300_000, async (pool) => {
    const report = await prune(pool, {
      inboxOlderThanMs: options.olderThan,
      deliveriesOlderThanMs: options.outboxOlderThan,
      chunk: options.chunk,
    });
    process.stdout.write(
      `${JSON.stringify({ deleted_inbox_rows: report.inboxRows, deleted_deliveries: report.deliveries })}\n`,
    );
  });
}
