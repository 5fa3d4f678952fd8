import { z } from 'zod';
import { resolveActor } from '../../core/audit/actor.ts';
import { DESTINATION_NAME } from '../../core/config/destinations-schema.ts';
import {
  listDeliveries,
  pauseDestination,
  redeliver,
  resolveDestination,
  resumeDestination,
  showDelivery,
} from '../../core/destinations/actions.ts';
import { destinationStates } from '../../core/destinations/state.ts';
import { HookgateError } from '../../core/errors.ts';
import { withCommandPool } from '../database.ts';
import { DELIVERY_STATUSES } from '../support/choices.ts';
import { age, plural, printJson, table } from '../support/format.ts';
import { hexDump } from '../support/hex-dump.ts';
import { commandConfig, endpointName, pointInTime } from '../support/options.ts';
import { terminalText, writeOut } from '../support/terminal-text.ts';

// `hookgate deliveries list|show`, `hookgate redeliver`, `hookgate destination pause|resume`:
// thin over services/core/destinations/actions.ts, which the console calls too.

const destinationName = z.string().regex(DESTINATION_NAME, 'is not a destination name');

const listSchema = z.strictObject({
  endpoint: endpointName.optional(),
  destination: destinationName.optional(),
  status: z.enum(DELIVERY_STATUSES).optional(),
  since: pointInTime().optional(),
  limit: z.coerce.number().int().min(1).max(10_000).default(50),
  json: z.boolean().optional(),
  config: z.string().min(1).optional(),
});

export async function deliveriesListCommand(raw: unknown): Promise<void> {
  const options = listSchema.parse(raw);
  const { rows, paused } = await withCommandPool('deliveries', 30_000, async (pool) => {
    const rows = await listDeliveries(pool, {
      endpoint: options.endpoint,
      destination: options.destination,
      status: options.status,
      since: options.since,
      limit: options.limit,
    });
    const listed = [...new Map(rows.map((row) => [`${row.endpoint}/${row.destination}`, row])).values()];
    return { rows, paused: (await destinationStates(pool, listed)).filter((state) => state.paused) };
  });
  if (options.json) {
    printJson(rows);
    return;
  }
  if (rows.length === 0) {
    writeOut('No delivery matches.\n');
    return;
  }
  const now = Date.now();
  writeOut(
    table(
      [
        'ID',
        'ENDPOINT',
        'DESTINATION',
        'EVENT ID',
        'TYPE',
        'STATUS',
        'ATTEMPTS',
        'HTTP',
        'AGE',
        'LAST ERROR',
      ],
      rows.map((row) => [
        row.id,
        row.endpoint,
        row.destination,
        row.event_id,
        row.event_type,
        row.status,
        String(row.attempts),
        row.http_status === null ? '-' : String(row.http_status),
        age((now - row.created_at.getTime()) / 1000),
        (row.last_error ?? '-').replace(/\s+/g, ' ').slice(0, 60),
      ]),
    ),
  );
  // Held rows say why: their destination is paused, by whom, since when and for what reason.
  for (const state of paused) {
    writeOut(
      terminalText(
        `${state.endpoint}/${state.destination} is paused (${age((now - state.changed_at.getTime()) / 1000)} ago by ${state.changed_by}${state.reason ? `: ${state.reason}` : ''}); its deliveries are held until \`hookgate destination resume ${state.destination}\`.`,
      ) + '\n',
    );
  }
}

const showSchema = z.strictObject({
  json: z.boolean().optional(),
  bytes: z.boolean().optional(),
  config: z.string().min(1).optional(),
});

export async function deliveriesShowCommand(id: string, raw: unknown): Promise<void> {
  const options = showSchema.parse(raw);
  const found = await withCommandPool('deliveries', 30_000, (pool) => showDelivery(pool, id));
  if (options.json) {
    printJson(found);
    return;
  }
  const { delivery, attempts } = found;
  const when = (date: Date | null) => (date ? date.toISOString() : '-');
  writeOut(
    [
      `delivery     ${delivery.id}`,
      `destination  ${delivery.endpoint}/${delivery.destination}`,
      `event        ${delivery.event_id} (${delivery.event_type})`,
      `webhook-id   ${delivery.webhook_id} (also its Idempotency-Key)`,
      `status       ${delivery.status}, ${delivery.attempts} attempt(s)`,
      `created      ${when(delivery.created_at)}`,
      `next attempt ${delivery.status === 'pending' || delivery.status === 'retrying' ? when(delivery.next_attempt_at) : '-'}`,
      `settled      ${when(delivery.settled_at)}`,
      '',
    ].join('\n'),
  );
  if (attempts.length === 0) {
    writeOut('No attempt yet.\n');
    return;
  }
  writeOut(
    table(
      ['ATTEMPT', 'STARTED', 'DURATION', 'HTTP', 'ERROR / ANSWER'],
      attempts.map((a) => [
        String(a.attempt),
        a.started_at.toISOString(),
        `${a.duration_ms}ms`,
        a.http_status === null ? '-' : String(a.http_status),
        // A broker's acknowledgement (kept as the delivered attempt's answer) is shown too.
        `${a.unrecorded ? '(unrecorded) ' : ''}${(a.error ?? a.response_head ?? '-').replace(/\s+/g, ' ').slice(0, 120)}`,
      ]),
    ),
  );
  const answered = attempts.filter((a) => a.response_hex !== null || a.response_headers !== null);
  if (!options.bytes) {
    if (answered.length > 0) writeOut("(--bytes shows each answer's headers and first bytes)\n");
    return;
  }
  for (const a of answered) {
    const bytes = Buffer.from(a.response_hex ?? '', 'hex');
    writeOut(
      [
        '',
        `attempt ${a.attempt}: answer headers`,
        ...(a.response_headers ?? '').split('\n').map((line) => `  ${line}`),
        `attempt ${a.attempt}: answer, first ${bytes.length} byte(s)`,
        ...hexDump(bytes),
        '',
      ].join('\n'),
    );
  }
}

const redeliverSchema = z.strictObject({
  endpoint: endpointName.optional(),
  destination: destinationName,
  id: z
    .array(z.string().regex(/^\d{1,18}$/, 'is not a delivery id'))
    .max(10_000)
    .optional(),
  status: z.enum(['dead', 'delivered']).optional(),
  dryRun: z.boolean().optional(),
  actor: z.string().min(1).max(200).optional(),
  json: z.boolean().optional(),
  config: z.string().min(1).optional(),
});

export async function redeliverCommand(raw: unknown): Promise<void> {
  const options = redeliverSchema.parse(raw);
  const config = commandConfig(options.config, true)!;
  // Refused before touching the database: a misspelt destination is a usage error.
  resolveDestination(config, options);
  const dryRun = options.dryRun ?? false;
  const summary = await withCommandPool('redeliver', 60_000, (pool) =>
    redeliver(pool, config, {
      endpoint: options.endpoint,
      destination: options.destination,
      ids: options.id,
      // With ids, either state is sent again; without, --status (default dead).
      statuses: options.id ? ['dead', 'delivered'] : [options.status ?? 'dead'],
      dryRun,
      actor: resolveActor(options.actor),
    }),
  );
  const name = `${summary.endpoint}/${summary.destination}`;
  if (options.json) printJson(summary);
  else if (summary.count > 0 && dryRun) {
    writeOut(
      `Would redeliver ${plural(summary.count, 'delivery', 'deliveries')} to ${name} (dry run, nothing changed).\n`,
    );
    if (summary.ids.length > 0) writeOut(`  ${summary.ids.join(' ')}\n`);
  } else if (summary.count > 0)
    writeOut(`Redelivering ${plural(summary.count, 'delivery', 'deliveries')} to ${name}.\n`);
  if (summary.count === 0) {
    throw new HookgateError(
      'nothing_changed',
      `No ${options.id ? 'dead or delivered delivery with those ids' : `${options.status ?? 'dead'} delivery`} to ${name}; ${dryRun ? 'nothing would be' : 'nothing was'} redelivered.`,
    );
  }
}

const pauseSchema = z.strictObject({
  endpoint: endpointName.optional(),
  reason: z.string().trim().min(1).max(1000).optional(),
  actor: z.string().min(1).max(200).optional(),
  json: z.boolean().optional(),
  config: z.string().min(1).optional(),
});

export async function destinationPauseCommand(
  destination: string,
  raw: unknown,
  pause: boolean,
): Promise<void> {
  const options = pauseSchema.parse(raw);
  const name = destinationName.parse(destination);
  const config = commandConfig(options.config, true)!;
  resolveDestination(config, { endpoint: options.endpoint, destination: name });
  const request = {
    endpoint: options.endpoint,
    destination: name,
    actor: resolveActor(options.actor),
    reason: options.reason,
  };
  const summary = await withCommandPool('destination', 30_000, (pool) =>
    pause ? pauseDestination(pool, config, request) : resumeDestination(pool, config, request),
  );
  if (options.json) {
    printJson(summary);
    return;
  }
  const target = `${summary.endpoint}/${summary.destination}`;
  const already = summary.wasPaused === pause ? ` (it was already ${pause ? 'paused' : 'running'})` : '';
  writeOut(
    pause
      ? `Paused ${target}${already}: ${plural(summary.count, 'delivery', 'deliveries')} held.\n`
      : `Resumed ${target}${already}: ${plural(summary.count, 'held delivery', 'held deliveries')} released.\n`,
  );
}
