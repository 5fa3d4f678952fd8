import { z } from 'zod';
import { resolveActor } from '../../core/audit/actor.ts';
import { recordAction } from '../../core/audit/audit.ts';
import { HookgateError } from '../../core/errors.ts';
import {
  countRequeue,
  findOrphans,
  previewRequeue,
  requeue,
  requeueFilters,
  requeueOrphans,
} from '../../core/inbox/requeue.ts';
import { STUCK_STATUSES } from '../../core/inbox/status.ts';
import { createLogger } from '../../core/logging.ts';
import { ensureQueues, retryPolicyFrom } from '../../core/queue/queues.ts';
import { withCommandQueue } from '../database.ts';
import { REQUEUE_STATUSES } from '../support/choices.ts';
import { age, printJson, table } from '../support/format.ts';
import { commandConfig, endpointName, pointInTime, requireEndpoint } from '../support/options.ts';
import { progressBar } from '../support/progress.ts';
import { writeErr, writeOut } from '../support/terminal-text.ts';

/**
 * What `requeue --status` takes: stuck events, and discarded ones when named (pending ones:
 * --orphans). Without --status only stuck events move.
 */
export const requeueOptionsSchema = z
  .strictObject({
    endpoint: z
      .string({
        error: () =>
          `is required: requeue moves one endpoint's events at a time (e.g. --endpoint stripe; "hookgate stats" lists the endpoints)`,
      })
      .pipe(endpointName),
    status: z
      .enum(REQUEUE_STATUSES, {
        error: 'only parked, dead or discarded events are requeued (pending: --orphans)',
      })
      .optional(),
    type: z.string().min(1).max(500).optional(),
    since: pointInTime().optional(),
    until: pointInTime().optional(),
    eventId: z.string().min(1).max(512).optional(),
    id: z.array(z.string().min(1).max(512)).max(10_000).optional(),
    orphans: z.boolean().optional(),
    limit: z.coerce.number().int().min(1).max(1_000_000).default(10_000),
    dryRun: z.boolean().optional(),
    actor: z.string().min(1).max(200).optional(),
    json: z.boolean().optional(),
    config: z.string().min(1).optional(),
  })
  .superRefine((options, ctx) => {
    // --orphans looks at pending rows only; a filter it would ignore is refused, not dropped.
    if (!options.orphans) return;
    for (const key of ['status', 'type', 'since', 'until', 'eventId', 'id'] as const) {
      if (options[key] !== undefined)
        ctx.addIssue({ code: 'custom', path: [key], message: 'cannot be combined with --orphans' });
    }
  });

type RequeueOptions = z.output<typeof requeueOptionsSchema>;

/** Nothing matched: exit 2, as a real run and a dry run alike (docs/cli.md). */
function nothingToRequeue(
  options: RequeueOptions,
  eventIds: readonly string[],
  dryRun: boolean,
): HookgateError {
  const would = dryRun ? 'nothing would be requeued' : 'nothing was requeued';
  if (options.orphans)
    return new HookgateError(
      'nothing_changed',
      `No pending event of ${options.endpoint} lacks a job; ${would}.`,
    );
  const statuses = options.status ? options.status : 'parked or dead';
  if (eventIds.length > 0)
    return new HookgateError(
      'nothing_changed',
      `None of ${eventIds.join(', ')} is ${statuses} on ${options.endpoint}; ${would} ("hookgate events show" tells where it is).`,
    );
  return new HookgateError(
    'nothing_changed',
    `No ${statuses} event of ${options.endpoint} matches; ${would}.`,
  );
}

/** `hookgate requeue`: parked/dead events back to pending with a fresh job each. */
export async function requeueCommand(raw: unknown): Promise<void> {
  const options = requeueOptionsSchema.parse(raw);
  // The queue policies (retries, backoff) come from the configuration: it is required here.
  const config = commandConfig(options.config, true)!;
  requireEndpoint(config, options.endpoint);
  const logger = createLogger(undefined, 2);
  const eventIds = [...(options.id ?? []), ...(options.eventId ? [options.eventId] : [])];
  const request = {
    endpoint: options.endpoint,
    statuses: options.status ? [options.status] : STUCK_STATUSES,
    eventIds,
    eventType: options.type,
    since: options.since,
    until: options.until,
    limit: options.limit,
    actor: resolveActor(options.actor),
  };
  await withCommandQueue('requeue', 60_000, logger, async (pool, boss) => {
    if (options.dryRun && options.orphans) {
      const found = await findOrphans(
        pool,
        boss,
        options.endpoint,
        { maxAttempts: config.worker.retryLimit + 1 },
        options.limit,
      );
      const orphans = found.redispatched;
      await recordAction(pool, {
        actor: request.actor,
        command: 'requeue',
        endpoint: options.endpoint,
        filters: { orphans: true, limit: options.limit },
        count: orphans.length + found.ended.length,
        dryRun: true,
        eventIds: [...orphans, ...found.ended],
      });
      if (options.json)
        printJson({
          endpoint: options.endpoint,
          dry_run: true,
          would_requeue: orphans.length,
          event_ids: orphans,
          would_end: found.ended,
        });
      else {
        writeOut(
          `Would give ${orphans.length} pending event(s) of ${options.endpoint} a new job (dry run, nothing changed).\n`,
        );
        for (const id of orphans) writeOut(`  ${id}\n`);
        if (found.ended.length > 0)
          writeOut(`and would end ${found.ended.length} with no attempt left: ${found.ended.join(', ')}\n`);
      }
      if (orphans.length === 0) throw nothingToRequeue(options, eventIds, true);
      return;
    }
    if (options.dryRun) {
      const candidates = await previewRequeue(pool, request);
      await recordAction(pool, {
        actor: request.actor,
        command: 'requeue',
        endpoint: options.endpoint,
        filters: requeueFilters(request),
        count: candidates.length,
        dryRun: true,
        eventIds: candidates.map((candidate) => candidate.event_id),
      });
      if (options.json) {
        printJson({
          endpoint: options.endpoint,
          dry_run: true,
          would_requeue: candidates.length,
          events: candidates,
        });
      } else {
        writeOut(
          `Would requeue ${candidates.length} event(s) of ${options.endpoint} (dry run, nothing changed).\n`,
        );
        if (candidates.length > 0) {
          const now = Date.now();
          writeOut(
            table(
              ['EVENT ID', 'TYPE', 'STATUS', 'ATTEMPTS', 'AGE', 'LAST ERROR'],
              candidates.map((c) => [
                c.event_id,
                c.event_type,
                c.status,
                String(c.attempts),
                age((now - c.received_at.getTime()) / 1000),
                (c.last_error ?? '-').replace(/\s+/g, ' ').slice(0, 60),
              ]),
            ),
          );
        }
      }
      if (candidates.length === 0) throw nothingToRequeue(options, eventIds, true);
      return;
    }
    await ensureQueues(boss, [options.endpoint], retryPolicyFrom(config.worker));
    let ids: string[];
    if (options.orphans) {
      const orphans = await requeueOrphans(
        pool,
        boss,
        options.endpoint,
        { maxAttempts: config.worker.retryLimit + 1 },
        request.actor,
        options.limit,
      );
      ids = orphans.redispatched;
      if (orphans.ended.length > 0) {
        process.stderr.write(
          `hookgate: ${orphans.ended.length} orphaned event(s) had no attempt left and are now parked or dead: ${orphans.ended.join(', ')}\n`,
        );
      }
    } else {
      const progress = progressBar('requeue');
      if (process.stderr.isTTY) progress.total(await countRequeue(pool, request));
      try {
        ids = await requeue(pool, { ...request, onChunk: (moved) => progress.advance(moved) });
      } finally {
        progress.stop();
      }
    }
    const missing = eventIds.filter((id) => !ids.includes(id));
    if (options.json)
      printJson({ endpoint: options.endpoint, requeued: ids.length, event_ids: ids, not_requeued: missing });
    else if (ids.length > 0) writeOut(`Requeued ${ids.length} event(s) of ${options.endpoint}.\n`);
    if (ids.length === 0) throw nothingToRequeue(options, eventIds, false);
    if (missing.length > 0)
      writeErr(`hookgate: not requeued (not parked/dead or unknown): ${missing.join(', ')}\n`);
  });
}
