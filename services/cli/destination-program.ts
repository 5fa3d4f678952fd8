import type { Command } from 'commander';
import { Option } from 'commander';
import { DELIVERY_STATUSES } from './support/choices.ts';
import { addConfigOption } from './support/config-option.ts';

// The destinations' commands (docs/destinations.md), added to the program in one call so that
// program.ts stays one line longer.

const examples = (lines: readonly string[]) =>
  `\nExamples:\n${lines.map((line) => `  $ ${line}`).join('\n')}\n`;

export function addDestinationCommands(program: Command): void {
  const deliveries = program.command('deliveries').description("deliveries to the endpoints' destinations");
  addConfigOption(
    deliveries
      .command('list')
      .description('list deliveries, newest first')
      .option('--endpoint <name>', 'only this endpoint')
      .option('--destination <name>', 'only this destination')
      .addOption(new Option('--status <status>', 'only deliveries in this state').choices(DELIVERY_STATUSES))
      .option('--since <when>', 'created since: a duration (2h) or a timestamp')
      .option('--limit <n>', 'at most this many', '50')
      .option('--json', 'print the result as JSON'),
  )
    .addHelpText(
      'after',
      examples([
        'hookgate deliveries list --destination ledger --status dead',
        'hookgate deliveries list --since 1h --json',
      ]),
    )
    .action(async (options: unknown) =>
      (await import('./commands/destinations.ts')).deliveriesListCommand(options),
    );
  addConfigOption(
    deliveries
      .command('show')
      .description(
        'one delivery and every attempt: time, status code, duration, error and first bytes of the answer',
      )
      .argument('<id>', 'the delivery id (deliveries list shows it)')
      .option('--bytes', "also each answer's headers and its first bytes as a hex dump")
      .option('--json', 'print the result as JSON'),
  )
    .addHelpText('after', examples(['hookgate deliveries show 42', 'hookgate deliveries show 42 --bytes']))
    .action(async (id: string, options: unknown) =>
      (await import('./commands/destinations.ts')).deliveriesShowCommand(id, options),
    );

  addConfigOption(
    program
      .command('redeliver')
      .description(
        'send dead (or delivered) deliveries of one destination again, with the same webhook-id and Idempotency-Key',
      )
      .requiredOption('--destination <name>', 'the destination')
      .option('--endpoint <name>', 'its endpoint, when several endpoints have a destination of that name')
      .option('--id <ids...>', 'these deliveries (dead or delivered)')
      .addOption(
        new Option('--status <status>', 'without --id: every delivery in this state (default dead)').choices([
          'dead',
          'delivered',
        ]),
      )
      .option('--dry-run', 'print what would be redelivered; change nothing (exit 2 when nothing would)')
      .option(
        '--actor <name>',
        'who is acting, for the audit trail (default $HOOKGATE_ACTOR, else the OS user)',
      )
      .option('--json', 'print the result as JSON'),
  )
    .addHelpText(
      'after',
      examples([
        'hookgate redeliver --destination ledger --dry-run',
        'hookgate redeliver --destination ledger --id 41 42',
      ]),
    )
    .action(async (options: unknown) =>
      (await import('./commands/destinations.ts')).redeliverCommand(options),
    );

  const destination = program.command('destination').description('pause or resume one destination');
  for (const [verb, pause] of [
    ['pause', true],
    ['resume', false],
  ] as const) {
    addConfigOption(
      destination
        .command(verb)
        .description(
          pause
            ? 'hold its deliveries (no attempt is made or counted) until resumed'
            : 'release its held deliveries',
        )
        .argument('<destination>', 'the destination name')
        .option('--endpoint <name>', 'its endpoint, when several endpoints have a destination of that name')
        .option('--reason <text>', 'why, shown with the state and kept in the audit trail')
        .option(
          '--actor <name>',
          'who is acting, for the audit trail (default $HOOKGATE_ACTOR, else the OS user)',
        )
        .option('--json', 'print the result as JSON'),
    )
      .addHelpText(
        'after',
        examples([
          pause
            ? `hookgate destination pause ledger --reason "ledger API maintenance until 14:00"`
            : 'hookgate destination resume ledger',
        ]),
      )
      .action(async (name: string, options: unknown) =>
        (await import('./commands/destinations.ts')).destinationPauseCommand(name, options, pause),
      );
  }
}
