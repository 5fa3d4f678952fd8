#!/usr/bin/env node
// First: starts tracing (when OTEL_* asks for it) before pg, express and http load.
import '../core/tracing-init.ts';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError, Option } from 'commander';
import { hashPasswordCommand } from '../console/hash-password.ts';
import { HookgateError } from '../core/errors.ts';
import { configCheckCommand } from './commands/config-check.ts';
import { eventsListCommand, eventsShowCommand } from './commands/events.ts';
import { migrateCommand } from './commands/migrate.ts';
import { pruneCommand } from './commands/prune.ts';
import { replayCommand } from './commands/replay.ts';
import { requeueCommand } from './commands/requeue.ts';
import { sendTestCommand } from './commands/send-test.ts';
import { serveCommand } from './commands/serve.ts';
import { statsCommand } from './commands/stats.ts';
import { verifyCommand } from './commands/verify.ts';
import { classify, EXIT_OK, EXIT_USAGE } from './support/exit.ts';
import { addConfigOption } from './support/options.ts';
import { terminalLines, writeErr } from './support/terminal-text.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

const examples = (lines: readonly string[]) =>
  `\nExamples:\n${lines.map((line) => `  $ ${line}`).join('\n')}\n`;

const program = new Command()
  .name('hookgate')
  .description('Verified, exactly-once webhook ingestion into PostgreSQL.')
  .version(VERSION, '-V, --version', 'print the version and exit')
  // Usage errors are one line and exit 2, like every other usage error (see fail below).
  .exitOverride()
  .configureOutput({
    outputError: (text, write) =>
      write(terminalLines(`hookgate: usage_invalid: ${text.trim().replace(/^error: /, '')} (see --help)\n`)),
  })
  .addHelpText(
    'after',
    `
Every command reads DATABASE_URL (unset: the embedded PostgreSQL under ./.hookgate/) and the
configuration from --config, else $HOOKGATE_CONFIG, else ./hookgate.yaml. Results go to stdout
(--json for scripts), logs and progress to stderr. Exit codes: 0 ok, 1 operational failure
(database down, check failed), 2 bad usage (flag, value, endpoint, nothing to do).
${examples([
  'hookgate stats --since 1h',
  'hookgate events list --endpoint stripe --status dead',
  'hookgate requeue --endpoint stripe --status dead --dry-run',
])}`,
  );

addConfigOption(
  program
    .command('serve')
    .description(
      'run the gateway, the worker, or both (DATABASE_URL unset: embedded PostgreSQL under ./.hookgate/)',
    )
    .addOption(
      new Option('--role <role>', 'what this process runs')
        .choices(['gateway', 'worker', 'console', 'all'])
        .default('all'),
    ),
)
  .addHelpText(
    'after',
    examples([
      'hookgate serve --config hookgate.yaml',
      'DATABASE_URL=postgres://… hookgate serve --role worker',
      'DATABASE_URL=postgres://… CONSOLE_SESSION_SECRET=… hookgate serve --role console',
    ]),
  )
  .action((options: unknown) => serveCommand(options));

addConfigOption(
  program
    .command('migrate')
    .description("apply hookgate's migrations and pg-boss's schema (safe to run concurrently)")
    .option('--dry-run', 'list the migrations that would be applied; change nothing')
    .option(
      '--check-config',
      'first check the configuration as "config check" does; refuse to migrate if it fails',
    )
    .option('--json', 'print the result as JSON'),
)
  .addHelpText(
    'after',
    examples(['hookgate migrate --dry-run', 'DATABASE_URL=postgres://… hookgate migrate']),
  )
  .action((options: unknown) => migrateCommand(options));

const consoleCommand = program.command('console').description('the web console (serve --role console)');
consoleCommand
  .command('hash-password')
  .description('read a password on stdin and print its hash for console.users or the users file')
  .addHelpText(
    'after',
    examples([
      'printf \'%s\' "$PASSWORD" | hookgate console hash-password',
      'echo "alice:$(printf \'%s\' "$PASSWORD" | hookgate console hash-password)" >> users',
    ]),
  )
  .action(() => hashPasswordCommand());

const configCommand = program.command('config').description('work with the configuration file');
addConfigOption(
  configCommand
    .command('check')
    .description(
      'refuse (exit 2) what "serve" would refuse at start without a database: keys, bounds, rules across keys, unset environment variables, demo secrets',
    )
    .option('--json', 'print the result as JSON'),
)
  .addHelpText(
    'after',
    examples([
      'hookgate config check --config hookgate.yaml',
      'STRIPE_WEBHOOK_SECRET=… hookgate config check',
    ]),
  )
  .action((options: unknown) => configCheckCommand(options));

addConfigOption(
  program
    .command('send-test')
    .description("sign a sample event with the endpoint's own scheme and post it to a running gateway")
    .requiredOption('--endpoint <name>', 'endpoint to send to')
    .option('--type <type>', 'event type of the sample')
    .option('--duplicates <n>', 'send the same event this many more times', '1')
    .option('--url <url>', 'gateway base URL or the endpoint URL (default http://127.0.0.1:$PORT)')
    .option(
      '--wait <duration>',
      'then wait up to this long (e.g. 60s) until a worker has processed it (reads DATABASE_URL)',
    ),
)
  .addHelpText(
    'after',
    examples([
      'hookgate send-test --endpoint demo',
      'hookgate send-test --endpoint demo --url https://hooks.example.com/webhooks/demo --wait 60s',
    ]),
  )
  .action((options: unknown) => sendTestCommand(options));

addConfigOption(
  program
    .command('stats')
    .description(
      'per endpoint: backlog by status, oldest pending age, deliveries and duplicate rate, received→processed latency',
    )
    .option('--endpoint <name>', 'only this endpoint')
    .option('--since <when>', 'window for deliveries and latency: a duration (1h) or a timestamp', '1h')
    .option('--json', 'print the figures as JSON'),
)
  .addHelpText(
    'after',
    examples([
      'hookgate stats',
      'hookgate stats --endpoint stripe --since 24h',
      'hookgate stats --json | jq .',
    ]),
  )
  .action((options: unknown) => statsCommand(options));

const events = program.command('events').description("list or show an endpoint's inbox rows");
const eventFilters = (command: Command) =>
  command
    .option('--endpoint <name>', 'only this endpoint')
    .addOption(
      new Option('--status <status>', 'only this status').choices([
        'pending',
        'processed',
        'ignored',
        'stale',
        'parked',
        'dead',
      ]),
    )
    .option('--type <type>', 'only this event type')
    .option('--since <when>', 'received at or after: a duration (1h) or a timestamp')
    .option('--until <when>', 'received before: a duration (10m) or a timestamp')
    .option('--event-id <id>', 'only this event id');
addConfigOption(
  eventFilters(events.command('list').description('inbox rows, newest first'))
    .option('--limit <n>', 'at most this many rows', '50')
    .option('--json', 'print the rows as JSON'),
)
  .addHelpText(
    'after',
    examples([
      'hookgate events list --endpoint stripe --status dead --since 2h',
      'hookgate events list --type invoice.paid --json | jq -r ".[].event_id"',
    ]),
  )
  .action((options: unknown) => eventsListCommand(options));
addConfigOption(
  events
    .command('show')
    .description('one event: payload, headers, attempts, last error and its timeline')
    .argument('<event-id>', 'the event id')
    .requiredOption('--endpoint <name>', 'the endpoint that received it')
    .option('--json', 'print the event as JSON'),
)
  .addHelpText('after', examples(['hookgate events show evt_1Q2w3E --endpoint stripe']))
  .action((eventId: string, options: Record<string, unknown>) => eventsShowCommand({ ...options, eventId }));

addConfigOption(
  eventFilters(
    program
      .command('requeue')
      .description('put parked/dead events (or, with --orphans, jobless pending ones) back to work'),
  )
    .option('--id <ids...>', 'these event ids (with --endpoint)')
    .option('--orphans', 'instead: give pending events whose job is gone or finished a new job')
    .option('--limit <n>', 'at most this many events', '10000')
    .option('--dry-run', 'print what would be requeued; change nothing')
    .option('--json', 'print the result as JSON'),
)
  .addHelpText(
    'after',
    examples([
      'hookgate requeue --endpoint stripe --status dead --dry-run',
      'hookgate requeue --endpoint stripe --status dead --since 2h',
      'hookgate requeue --endpoint stripe --id evt_1 evt_2',
      'hookgate requeue --endpoint stripe --orphans',
    ]),
  )
  .action((options: unknown) => requeueCommand(options));

addConfigOption(
  program
    .command('replay')
    .description(
      "fill an outage's gap: pull the window's events from the provider's API (Stripe, GitHub) through the claim",
    )
    .requiredOption('--endpoint <name>', 'endpoint to fill (its replay settings say where from)')
    .requiredOption('--since <when>', 'start of the window: a duration (6h) or a timestamp')
    .option('--until <when>', 'end of the window (default now)')
    .option('--dry-run', 'count what is missing; store nothing')
    .option('--json', 'print the result as JSON'),
)
  .addHelpText(
    'after',
    examples([
      'STRIPE_API_KEY=rk_live_… hookgate replay --endpoint stripe --since 2026-11-30T02:00:00Z --until 2026-11-30T04:00:00Z --dry-run',
      'GITHUB_TOKEN=… hookgate replay --endpoint github --since 6h',
    ]),
  )
  .action((options: unknown) => replayCommand(options));

addConfigOption(
  program
    .command('prune')
    .description('delete settled inbox rows (and delivered downstream effects) older than a window')
    .option('--older-than <duration>', 'inbox retention for processed/ignored/stale rows', '30d')
    .option('--outbox-older-than <duration>', 'retention for delivered downstream effects', '90d')
    .option('--batch <n>', 'rows deleted per statement', '5000')
    .option('--dry-run', 'count what would be deleted; delete nothing')
    .option('--force', 'allow a window under 3 days (ids pruned are no longer deduplicated)')
    .option('--json', 'print the result as JSON'),
)
  .addHelpText(
    'after',
    examples(['hookgate prune --older-than 30d --dry-run', 'hookgate prune --older-than 30d']),
  )
  .action((options: unknown) => pruneCommand(options));

addConfigOption(
  program
    .command('verify')
    .description(
      'after a load run drains: every acknowledged delivery settled once, nothing pending, payments booked, no entity behind',
    )
    .option(
      '--sent <file>',
      'acknowledged deliveries, one JSON line each (the load driver or k6 --console-output)',
    )
    .option('--json', 'print the report as one JSON object'),
)
  .addHelpText('after', examples(['hookgate verify --sent sent.jsonl --config hookgate.yaml']))
  .action((options: unknown) => verifyCommand(options));

function fail(error: unknown): never {
  if (error instanceof CommanderError) {
    // Help and --version are "errors" only to commander; its usage messages are already out.
    const quiet = ['commander.helpDisplayed', 'commander.version', 'commander.help'];
    process.exit(quiet.includes(error.code) ? EXIT_OK : EXIT_USAGE);
  }
  const { line, exitCode, stack } = classify(error);
  writeErr(`hookgate: ${line}\n`);
  if (stack) writeErr(`${stack}\n`);
  process.exit(exitCode);
}

function checkEnvironment(): void {
  const level = process.env.LOG_LEVEL?.trim();
  if (level && !LOG_LEVELS.includes(level)) {
    throw new HookgateError(
      'env_invalid',
      `LOG_LEVEL="${level}" is not a log level; use one of ${LOG_LEVELS.join(', ')}.`,
    );
  }
}

try {
  checkEnvironment();
  await program.parseAsync(process.argv);
} catch (error) {
  fail(error);
}
