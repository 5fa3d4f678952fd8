import { withCommandPool } from '../database.ts';

/**
 * Backlog per endpoint and unsettled status from the inbox's partial indexes (so it costs the
 * size of the backlog), plus settled totals.
 */
export const BACKLOG = `
  SELECT endpoint, status, count(*)::bigint AS events,
         EXTRACT(EPOCH FROM now() - min(received_at))::float8 AS oldest_age_seconds
    FROM hookgate.inbox
   WHERE status IN ('pending', 'parked', 'dead')
   GROUP BY endpoint, status
   ORDER BY endpoint, status`;

/** `hookgate stats`: one JSON line per (endpoint, status) with unsettled events. */
export async function statsCommand(): Promise<void> {
  await withCommandPool('stats', 30_000, async (pool) => {
    const result = await pool.query<{
      endpoint: string;
      status: string;
      events: string;
      oldest_age_seconds: number;
    }>(BACKLOG);
    if (result.rows.length === 0)
      process.stderr.write('No pending, parked or dead events: the backlog is empty.\n');
    for (const row of result.rows) {
      process.stdout.write(
        `${JSON.stringify({ endpoint: row.endpoint, status: row.status, events: Number(row.events), oldest_age_seconds: Math.round(row.oldest_age_seconds * 1000) / 1000 })}\n`,
      );
    }
  });
}
