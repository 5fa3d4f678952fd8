import type { Command } from 'commander';
import { Option } from 'commander';
import { AUDITED_COMMANDS } from '../core/audit/audit.ts';
import { DISCARDABLE_STATUSES } from '../core/inbox/status.ts';
import { addConfigOption } from './support/config-option.ts';

// The operations commands of issue 23 (audit, discard, pause, resume), registered from one file so
// program.ts gains one line for them.

const examples = (lines: readonly string[]) =>
  `\nExamples:\n${lines.map((line) => `  $ ${line}`).join('\n')}\n`;

/** `--actor`, the name an action is audited under. */
export function addActorOption(command: Command): Command {
  return command.option(
    '--actor <name>',
    'who is acting, for the audit trail (default $HOOKGATE_ACTOR, else the OS user)',
  );
}

export function addOperationsCommands(program: Command): void {
  addConfigOption(
    program
      .command('audit')
      .description(`operator actions (${AUDITED_COMMANDS.join(', ')}), newest first`)
      .option('--since <when>', 'only actions at or after: a duration (24h) or a timestamp')
      .option('--endpoint <name>', 'only actions on this endpoint')
      .option('--command <name>', `only this command: ${AUDITED_COMMANDS.map((c) => `"${c}"`).join(', ')}`)
      .option('--limit <n>', 'at most this many rows', '100')
      .option('--json', 'print the rows as JSON'),
  )
    .addHelpText(
      'after',
      examples(['hookgate audit --since 24h', 'hookgate audit --endpoint stripe --command discard --json']),
    )
    .action(async (options: unknown) => (await import('./commands/audit.ts')).auditCommand(options));

  addConfigOption(
    addActorOption(
      program
        .command('discard')
        .description('settle parked/dead events for good as discarded, with who, why and when (audited)')
        .option('--endpoint <name>', 'the endpoint whose events to discard (required)')
        .addOption(new Option('--status <status>', 'only this status').choices(DISCARDABLE_STATUSES))
        .option('--type <type>', 'only this event type')
        .option('--since <when>', 'received at or after: a duration (1h) or a timestamp')
        .option('--until <when>', 'received before: a duration (10m) or a timestamp')
        .option('--id <ids...>', 'only these event ids')
        .option('--reason <text>', 'why (required; kept on each event and in the audit trail)')
        .option('--limit <n>', 'at most this many events', '10000')
        .option('--dry-run', 'print what would be discarded; change nothing (exit 2 when nothing would)')
        .option('--json', 'print the result as JSON'),
    ),
  )
    .addHelpText(
      'after',
      examples([
        'hookgate discard --endpoint stripe --status dead --type invoice.voided --reason "test-mode leftovers" --dry-run',
        'hookgate discard --endpoint github --id 5f1c… --reason "projection_unkeyed: no entity in this event kind"',
      ]),
    )
    .action(async (options: unknown) => (await import('./commands/discard.ts')).discardCommand(options));

  addConfigOption(
    addActorOption(
      program
        .command('pause')
        .description(
          "hold an endpoint's processing: workers apply none of its events; the gateway keeps accepting",
        )
        .option('--endpoint <name>', 'the endpoint to pause (required)')
        .option('--reason <text>', 'why (shown by stats and the audit trail)')
        .option('--json', 'print the result as JSON'),
    ),
  )
    .addHelpText(
      'after',
      examples(['hookgate pause --endpoint stripe --reason "deploying the billing handler fix"']),
    )
    .action(async (options: unknown) => (await import('./commands/pause.ts')).pauseCommand(options));

  addConfigOption(
    addActorOption(
      program
        .command('resume')
        .description('release a paused endpoint: its held events are applied in their order')
        .option('--endpoint <name>', 'the endpoint to resume (required)')
        .option('--reason <text>', 'why (for the audit trail)')
        .option('--json', 'print the result as JSON'),
    ),
  )
    .addHelpText('after', examples(['hookgate resume --endpoint stripe']))
    .action(async (options: unknown) => (await import('./commands/pause.ts')).resumeCommand(options));

  const quarantine = program
    .command('quarantine')
    .description('verified deliveries that could not become events, kept and acknowledged (docs/gateway.md)');
  addConfigOption(
    quarantine
      .command('list')
      .description('held deliveries, newest first')
      .option('--endpoint <name>', 'only this endpoint')
      .option('--all', 'released and dropped ones too')
      .option('--limit <n>', 'at most this many rows', '100')
      .option('--json', 'print the rows as JSON'),
  )
    .addHelpText(
      'after',
      examples(['hookgate quarantine list', 'hookgate quarantine list --endpoint stripe --all --json']),
    )
    .action(async (options: unknown) =>
      (await import('./commands/quarantine.ts')).quarantineListCommand(options),
    );
  addConfigOption(
    quarantine
      .command('show')
      .description('the deliveries, their kept headers and bodies')
      .argument('<id...>', 'quarantine ids')
      .option('--json', 'print them as JSON'),
  )
    .addHelpText('after', examples(['hookgate quarantine show 12', 'hookgate quarantine show 12 13 --json']))
    .action(async (ids: unknown, options: unknown) =>
      (await import('./commands/quarantine.ts')).quarantineShowCommand(ids, options),
    );
  addConfigOption(
    addActorOption(
      quarantine
        .command('release')
        .description(
          'claim again through the normal path with the current config; still-unusable ones stay held',
        )
        .argument('<id...>', 'quarantine ids')
        .option('--reason <text>', 'why (for the audit trail)')
        .option('--json', 'print the outcomes as JSON'),
    ),
  )
    .addHelpText('after', examples(['hookgate quarantine release 12 13 --reason "added extract.eventType"']))
    .action(async (ids: unknown, options: unknown) =>
      (await import('./commands/quarantine.ts')).quarantineReleaseCommand(ids, options),
    );
  addConfigOption(
    addActorOption(
      quarantine
        .command('drop')
        .description('give up held deliveries for good (kept, marked dropped)')
        .argument('<id...>', 'quarantine ids')
        .option('--reason <text>', 'why (required)')
        .option('--json', 'print the result as JSON'),
    ),
  )
    .addHelpText(
      'after',
      examples(['hookgate quarantine drop 12 --reason "test traffic from the provider console"']),
    )
    .action(async (ids: unknown, options: unknown) =>
      (await import('./commands/quarantine.ts')).quarantineDropCommand(ids, options),
    );
}
