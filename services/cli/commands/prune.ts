import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { resolveActor } from '../../core/audit/actor.ts';
import { DEFAULT_DEDUPE_HORIZON_MS } from '../../core/config/dedupe-schema.ts';
import { durationMs, formatDuration } from '../../core/config/duration.ts';
import { countOldDeliveryCounts, pruneDeliveryCounts } from '../../core/inbox/delivery-counts.ts';
import { INBOX_MAX_MOVED_ROWS } from '../../core/inbox/partitions.ts';
import { countPrunable, prune } from '../../core/retention/prune.ts';
import { withCommandPool } from '../database.ts';
import { printJson } from '../support/format.ts';
import { commandConfig } from '../support/options.ts';
import { progressBar } from '../support/progress.ts';
import { writeOut } from '../support/terminal-text.ts';

const DAY = 86_400_000;

/**
 * Stripe retries for 3 days: a shorter window removes payloads (what `events show` and the
 * destinations' sends read) while their events may still arrive again, so it needs --force. Their
 * keys stay for dedupe.horizon whatever this window.
 */
const MIN_WINDOW = 3 * DAY;

export const pruneOptionsSchema = z
  .strictObject({
    olderThan: durationMs.pipe(z.number().min(60_000, 'must be at least 1m')),
    deliveriesOlderThan: durationMs.pipe(z.number().min(60_000, 'must be at least 1m')),
    auditOlderThan: durationMs.pipe(z.number().min(86_400_000, 'must be at least 1d')).optional(),
    quarantineOlderThan: durationMs.pipe(z.number().min(60_000, 'must be at least 1m')).optional(),
    batch: z.coerce.number().int().min(100).max(100_000),
    /** Milliseconds between batches: a paced prune leaves the database to the ack path. */
    pause: z.coerce.number().int().min(0).max(60_000).default(0),
    dryRun: z.boolean().optional(),
    force: z.boolean().optional(),
    actor: z.string().min(1).max(200).optional(),
    json: z.boolean().optional(),
    config: z.string().min(1).optional(),
  })
  .superRefine((options, ctx) => {
    if (options.force) return;
    const messages = {
      olderThan:
        "is under 3d, the providers' retry window: payloads would go while their events may still be delivered again (their keys stay for dedupe.horizon) (--force to do it anyway)",
      deliveriesOlderThan:
        "is under 3d, the providers' retry window: a redelivery of a pruned event would be applied again (--force to do it anyway)",
    } as const;
    for (const key of ['olderThan', 'deliveriesOlderThan'] as const) {
      if (options[key] < MIN_WINDOW) ctx.addIssue({ code: 'custom', path: [key], message: messages[key] });
    }
  });

/**
 * `hookgate prune`: retention for settled inbox rows and delivered destination deliveries.
 * Pending, parked and dead rows are never deleted, whatever their age.
 */
export async function pruneCommand(raw: unknown): Promise<void> {
  const options = pruneOptionsSchema.parse(raw);
  // The keys' retention is the configuration's (the file may be absent: the default then).
  const horizonMs = commandConfig(options.config, false)?.dedupe.horizon ?? DEFAULT_DEDUPE_HORIZON_MS;
  const now = new Date();
  await withCommandPool('prune', 300_000, async (pool) => {
    const windows = {
      inboxOlderThanMs: options.olderThan,
      deliveriesOlderThanMs: options.deliveriesOlderThan,
      auditOlderThanMs: options.auditOlderThan,
      quarantineOlderThanMs: options.quarantineOlderThan,
      dedupe: { now, horizonMs },
    };
    // Payloads older than the window go; their keys stay until the horizon: what a replay or a
    // reconciliation can still tell apart, said whether or not this run deletes anything.
    const keysKept = `Deduplication keys are kept ${formatDuration(horizonMs)} (dedupe.horizon), whether or not their payloads are: replay and reconciliation windows starting after ${new Date(now.getTime() - horizonMs).toISOString()} are safe; earlier ones are refused unless forced.`;
    const seconds = options.olderThan / 1000;
    if (options.dryRun) {
      // prune's own dry run, so the audit trail records it.
      const would = await prune(pool, {
        ...windows,
        chunk: 1,
        dryRun: true,
        actor: resolveActor(options.actor),
      });
      const counts = await countOldDeliveryCounts(pool, seconds);
      if (options.json)
        printJson({
          dry_run: true,
          inbox_rows: would.inboxRows,
          dedupe_horizon: formatDuration(horizonMs),
          dedupe_safe_since: new Date(now.getTime() - horizonMs).toISOString(),
          attempts: would.attempts,
          audit: would.audit,
          quarantine: would.quarantine,
          destination_deliveries: would.destinationDeliveries,
          delivery_count_rows: counts,
        });
      else
        writeOut(
          `Would delete ${would.inboxRows} settled inbox row(s) (with their week's partition, or one by one), ${would.attempts} attempt history row(s), ${would.destinationDeliveries} delivered destination delivery(ies), ${would.audit} audit row(s), ${would.quarantine} released or dropped quarantine row(s) and ${counts} per-minute delivery count row(s) (dry run, nothing deleted).\n${keysKept}\n`,
        );
      return;
    }
    const progress = progressBar('prune');
    if (process.stderr.isTTY) {
      const total = await countPrunable(pool, windows);
      progress.total(
        total.inboxRows + total.attempts + total.destinationDeliveries + total.audit + total.quarantine,
      );
    }
    let report: Awaited<ReturnType<typeof prune>>;
    // Statements run, so a script can see the pacing it asked for (--batch, --pause).
    let statements = 0;
    try {
      report = await prune(pool, {
        ...windows,
        actor: resolveActor(options.actor),
        chunk: options.batch,
        pauseMs: options.pause,
        onBatch: ({ deleted }) => {
          statements += 1;
          progress.advance(deleted);
        },
      });
    } finally {
      progress.stop();
    }
    let counts = 0;
    for (;;) {
      const deleted = await pruneDeliveryCounts(pool, seconds, options.batch);
      statements += 1;
      counts += deleted;
      if (deleted < options.batch) break;
      if (options.pause > 0) await sleep(options.pause);
    }
    if (options.json)
      printJson({
        inbox_rows: report.inboxRows,
        inbox_rows_in_partitions: report.inboxRowsInPartitions,
        inbox_keys: report.inboxKeys,
        dedupe_horizon: formatDuration(horizonMs),
        dedupe_safe_since: new Date(now.getTime() - horizonMs).toISOString(),
        inbox_partitions: report.inboxPartitions,
        inbox_partitions_left: report.inboxPartitionsLeft.map((p) => ({
          partition: p.name,
          reason: p.left,
          ...(p.kept === undefined ? {} : { unsettled_rows: p.kept }),
        })),
        attempts: report.attempts,
        audit: report.audit,
        quarantine: report.quarantine,
        destination_deliveries: report.destinationDeliveries,
        delivery_count_rows: counts,
        batches: statements,
      });
    else {
      writeOut(
        `Dropped ${report.inboxPartitions} inbox week partition(s) past the window with ${report.inboxRowsInPartitions} settled row(s) (their unsettled rows kept).\n`,
      );
      for (const left of report.inboxPartitionsLeft)
        writeOut(
          left.left === 'unsettled_rows'
            ? `Kept inbox partition ${left.name} although it is past the window: it holds more than ${INBOX_MAX_MOVED_ROWS} pending, parked, dead or discarded events (${left.kept}); requeue or discard them and prune again.\n`
            : `Kept inbox partition ${left.name} for now: other sessions held the inbox for more than a second; the next prune drops it.\n`,
        );
      writeOut(
        `Deleted ${report.inboxRows} settled inbox row(s) (${report.inboxRowsInPartitions} with their partition), ${report.attempts} attempt history row(s), ${report.destinationDeliveries} delivered destination delivery(ies), ${report.audit} audit row(s), ${report.quarantine} released or dropped quarantine row(s), ${counts} per-minute delivery count row(s) and ${report.inboxKeys} deduplication key(s) older than the horizon in ${statements} batch(es).\n${keysKept}\n`,
      );
    }
  });
}
