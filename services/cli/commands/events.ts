import { z } from 'zod';
import { withCommandPool } from '../database.ts';

export const eventsOptionsSchema = z.strictObject({
  endpoint: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, 'is not an endpoint name'),
  status: z.enum(['pending', 'processed', 'ignored', 'stale', 'parked', 'dead']).optional(),
  limit: z.coerce.number().int().min(1).max(10_000).default(100),
});

export const LIST_EVENTS = `
  SELECT event_id, event_type, status, attempts, last_error, entity_type, entity_id,
         entity_version::text AS entity_version, received_at, processed_at
    FROM hookgate.inbox
   WHERE endpoint = $1 AND ($2::text IS NULL OR status = $2)
   ORDER BY received_at DESC, event_id
   LIMIT $3`;

/** `hookgate events`: one JSON line per inbox row, newest first. */
export async function eventsCommand(raw: unknown): Promise<void> {
  const options = eventsOptionsSchema.parse(raw);
  await withCommandPool('events', 30_000, async (pool) => {
    const result = await pool.query(LIST_EVENTS, [options.endpoint, options.status ?? null, options.limit]);
    for (const row of result.rows) process.stdout.write(`${JSON.stringify(row)}\n`);
  });
}
