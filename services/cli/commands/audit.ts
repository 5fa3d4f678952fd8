import { z } from 'zod';
import { listActions } from '../../core/audit/audit.ts';
import { withCommandPool } from '../database.ts';
import { printJson, table } from '../support/format.ts';
import { commandConfig, endpointName, pointInTime, requireEndpoint } from '../support/options.ts';
import { writeErr, writeOut } from '../support/terminal-text.ts';

export const auditOptionsSchema = z.strictObject({
  since: pointInTime().optional(),
  endpoint: endpointName.optional(),
  command: z.string().min(1).max(63).optional(),
  limit: z.coerce.number().int().min(1).max(10_000).default(100),
  json: z.boolean().optional(),
  config: z.string().min(1).optional(),
});

/** What an action was asked for, on one line: `statuses=dead ids=evt_1,evt_2`. */
function describeFilters(filters: Record<string, unknown>): string {
  const parts = Object.entries(filters).map(
    ([key, value]) => `${key}=${Array.isArray(value) ? value.join(',') : String(value)}`,
  );
  const line = parts.join(' ');
  return line.length > 80 ? `${line.slice(0, 79)}…` : line || '-';
}

/** `hookgate audit`: the operators' actions, newest first. */
export async function auditCommand(raw: unknown): Promise<void> {
  const options = auditOptionsSchema.parse(raw);
  const config = commandConfig(options.config, false);
  if (config && options.endpoint !== undefined) requireEndpoint(config, options.endpoint);
  await withCommandPool('audit', 30_000, async (pool) => {
    const rows = await listActions(pool, options);
    if (options.json) {
      printJson(rows.map(({ at_key: _key, ...row }) => row));
      return;
    }
    if (rows.length === 0) {
      writeErr('No operator action matches these filters.\n');
      return;
    }
    writeOut(
      table(
        ['AT', 'ACTOR', 'COMMAND', 'ENDPOINT', 'COUNT', 'DRY RUN', 'FILTERS', 'REASON'],
        rows.map((row) => [
          row.at.toISOString(),
          row.actor,
          row.command,
          row.endpoint ?? '-',
          String(row.count),
          row.dry_run ? 'yes' : 'no',
          describeFilters(row.filters),
          row.reason ?? '-',
        ]),
      ),
    );
    if (rows.length === options.limit) writeErr(`(first ${options.limit}; --limit shows more)\n`);
  });
}
