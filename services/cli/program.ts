import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError, Option } from 'commander';
import { HookgateError } from '../core/errors.ts';
import { INBOX_STATUSES } from '../core/inbox/status.ts';
import { addDestinationCommands } from './destination-program.ts';
import { addActorOption, addOperationsCommands } from './operations-program.ts';
import { REQUEUE_STATUSES } from './support/choices.ts';
import { addConfigOption } from './support/config-option.ts';
import { EXIT_OK, EXIT_USAGE } from './support/exit-codes.ts';
import { terminalLines } from './support/terminal-text.ts';

// Each command's module is imported when that command runs, not when the program is built: a
// command line then loads only what it uses (`--version` and `--help` load no command at all, and
// `serve` none of the operators' commands), which is most of a container's start-up time.

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * Where the command line's own text goes (help, usage errors, the failure line). What reaches it
 * may quote what was typed or sent (an id, a type): control characters are printed as escapes.
 */
export interface CliOutput {
  out(text: string): void;
  err(text: string): void;
}

const PROCESS_OUTPUT: CliOutput = {
  out: (text) => process.stdout.write(terminalLines(text)),
  err: (text) => process.stderr.write(terminalLines(text)),
};

const examples = (lines: readonly string[]) =>
  `\nExamples:\n${lines.map((line) => `  $ ${line}`).join('\n')}\n`;

/**
 * The `hookgate` command line, built fresh for each run so that tests can parse command lines in
 * process and read the exit code and the one failure line instead of spawning a process.
 */
export function buildProgram(output: CliOutput = PROCESS_OUTPUT): Command {
  const program = new Command()
    .name('hookgate')
    .description('Verified, exactly-once webhook ingestion into PostgreSQL.')
    .version(VERSION, '-V, --version', 'print the version and exit')
    // Usage errors are one line and exit 2, like every other usage error (see runCli below).
    .exitOverride()
    .configureOutput({
      writeOut: (text) => output.out(text),
      writeErr: (text) => output.err(text),
      outputError: (text, write) =>
        write(
          terminalLines(`hookgate: usage_invalid: ${text.trim().replace(/^error: /, '')} (see --help)\n`),
        ),
    })
    .showSuggestionAfterError(true)
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
        'run the gateway, the worker, both, or the web console (DATABASE_URL unset: embedded PostgreSQL under ./.hookgate/, and `all` serves the console too)',
      )
      .addOption(
        new Option('--role <role>', 'what this process runs')
          .choices(['gateway', 'worker', 'console', 'all'])
          .default('all'),
      ),
  )
    .addHelpText(
      'after',
      `
Environment: PORT (webhooks, default 8080), METRICS_PORT (/metrics, /healthz, /readyz, default
9464), LISTEN_ADDRESS, DATABASE_URL, LOG_LEVEL, LOG_FORMAT (json|text); the console's CONSOLE_PORT (8081),
CONSOLE_LISTEN_ADDRESS (127.0.0.1), CONSOLE_SESSION_SECRET, CONSOLE_USERS_FILE (docs/console.md). SIGTERM and SIGINT stop it cleanly; SIGHUP is
logged and ignored (the configuration is read at start only: restart to change it).
${examples([
  'hookgate serve --config hookgate.yaml',
  'DATABASE_URL=postgres://… hookgate serve --role worker',
  'DATABASE_URL=postgres://… CONSOLE_SESSION_SECRET=… hookgate serve --role console',
])}`,
    )
    .action(async (options: unknown) => (await import('./commands/serve.ts')).serveCommand(options));

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
    .action(async () => (await import('../console/hash-password.ts')).hashPasswordCommand());
  consoleCommand
    .command('new-token')
    .description('make an access token for scripts and the API; prints it once, and its console.tokens entry')
    .requiredOption('--name <name>', "the token's name (the audit trail records its actions as api:<name>)")
    .addOption(
      new Option('--role <role>', 'viewer (reads) or operator (reads and acts)')
        .choices(['viewer', 'operator'])
        .default('operator'),
    )
    .option('--json', 'print name, role, sha256 and the token as JSON')
    .addHelpText(
      'after',
      examples([
        'hookgate console new-token --name ci',
        'hookgate console new-token --name dashboard --role viewer',
      ]),
    )
    .action(async (options: unknown) =>
      (await import('./commands/console-tokens.ts')).newTokenCommand(options),
    );
  addConfigOption(
    consoleCommand
      .command('tokens')
      .description('the configured access tokens: name, role and last use (never a token or its hash)')
      .option('--json', 'print them as JSON')
      .addHelpText('after', examples(['hookgate console tokens --config hookgate.yaml'])),
  ).action(async (options: unknown) => (await import('./commands/console-tokens.ts')).tokensCommand(options));

  addConfigOption(
    program
      .command('migrate')
      .description("apply hookgate's migrations and pg-boss's schema (safe to run concurrently)")
      .option('--dry-run', 'list the migrations that would be applied; change nothing')
      .option(
        '--check-config',
        'first check the configuration as "config check" does; refuse to migrate if it fails',
      )
      .option(
        '--create-roles',
        'also create the roles hookgate_runtime (rows only) and hookgate_readonly (reads only); needs CREATEROLE',
      )
      .option('--json', 'print the result as JSON'),
  )
    .addHelpText(
      'after',
      examples([
        'hookgate migrate --dry-run',
        'DATABASE_URL=postgres://… hookgate migrate',
        'DATABASE_URL=postgres://owner@… hookgate migrate --create-roles',
      ]),
    )
    .action(async (options: unknown) => (await import('./commands/migrate.ts')).migrateCommand(options));

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
    .action(async (options: unknown) =>
      (await import('./commands/config-check.ts')).configCheckCommand(options),
    );

  addConfigOption(
    program
      .command('send-test')
      .description(
        "sign a test event (type hookgate.test: every handler settles it `ignored`, no business writes) with the endpoint's own scheme and post it to a running gateway",
      )
      .requiredOption('--endpoint <name>', 'endpoint to send to')
      .option(
        '--type <type>',
        'send a sample of this real event type instead: the handler APPLIES it (business writes); not for production',
      )
      .option('--duplicates <n>', 'send the same event this many more times', '1')
      .option(
        '--url <url>',
        "gateway base URL or the endpoint URL (default http://127.0.0.1:$PORT with this shell's PORT, else 8080; the server's PORT is not read)",
      )
      .option(
        '--wait <duration>',
        'then wait up to this long (e.g. 60s) until a worker has settled it (reads DATABASE_URL)',
      ),
  )
    .addHelpText(
      'after',
      examples([
        'hookgate send-test --endpoint demo',
        'PORT=9000 hookgate send-test --endpoint demo   # a gateway started with PORT=9000',
        'hookgate send-test --endpoint demo --url https://hooks.example.com/webhooks/demo --wait 60s',
      ]),
    )
    .action(async (options: unknown) => (await import('./commands/send-test.ts')).sendTestCommand(options));

  addConfigOption(
    program
      .command('stats')
      .description(
        'per endpoint: backlog by status, oldest pending age, every settled status, deliveries and duplicate rate, received→processed latency',
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
    .action(async (options: unknown) => (await import('./commands/stats.ts')).statsCommand(options));

  const events = program.command('events').description("list or show an endpoint's inbox rows");
  const eventFilters = (command: Command, statuses: readonly string[]) =>
    command
      .addOption(new Option('--status <status>', 'only this status').choices(statuses))
      .option('--type <type>', 'only this event type')
      .option('--since <when>', 'received at or after: a duration (1h) or a timestamp')
      .option('--until <when>', 'received before: a duration (10m) or a timestamp')
      .option('--event-id <id>', 'only this event id');
  addConfigOption(
    eventFilters(
      events
        .command('list')
        .description('inbox rows, newest first')
        .option('--endpoint <name>', 'only this endpoint'),
      INBOX_STATUSES,
    )
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
    .action(async (options: unknown) => (await import('./commands/events.ts')).eventsListCommand(options));
  addConfigOption(
    events
      .command('show')
      .description('one event: payload, headers, attempts, last error and its timeline')
      .argument('<event-id>', 'the event id')
      .requiredOption('--endpoint <name>', 'the endpoint that received it')
      .option('--json', 'print the event as JSON'),
  )
    .addHelpText('after', examples(['hookgate events show evt_1Q2w3E --endpoint stripe']))
    .action(async (eventId: string, options: Record<string, unknown>) =>
      (await import('./commands/events.ts')).eventsShowCommand({ ...options, eventId }),
    );

  const requeue = addConfigOption(
    eventFilters(
      program
        .command('requeue')
        .description('put parked/dead events (or, with --orphans, jobless pending ones) back to work')
        .option('--endpoint <name>', 'the endpoint whose events to requeue (required)'),
      REQUEUE_STATUSES,
    )
      .option('--id <ids...>', 'these event ids (with --endpoint)')
      .option('--orphans', 'instead: give pending events whose job is gone or finished a new job')
      .option('--limit <n>', 'at most this many events', '10000')
      .option('--dry-run', 'print what would be requeued; change nothing (exit 2 when nothing would)')
      .option('--json', 'print the result as JSON'),
  );
  addActorOption(requeue)
    .addHelpText(
      'after',
      examples([
        'hookgate requeue --endpoint stripe --status dead --dry-run',
        'hookgate requeue --endpoint stripe --status dead --since 2h',
        'hookgate requeue --endpoint stripe --id evt_1 evt_2',
        'hookgate requeue --endpoint stripe --orphans --dry-run',
      ]),
    )
    .action(async (options: unknown) => (await import('./commands/requeue.ts')).requeueCommand(options));

  const replay = addConfigOption(
    program
      .command('replay')
      .description(
        "fill an outage's gap: pull the window's events from the provider's API (Stripe, GitHub, Paddle) through the claim",
      )
      .requiredOption('--endpoint <name>', 'endpoint to fill (its replay settings say where from)')
      .requiredOption('--since <when>', 'start of the window: a duration (6h) or a timestamp')
      .option('--until <when>', 'end of the window (default now)')
      .option('--dry-run', 'count what is missing; store nothing')
      .option(
        '--force',
        'allow a window starting before the dedupe horizon (events whose keys are gone are stored and applied again); audited',
      )
      .option('--json', 'print the result as JSON'),
  );
  addActorOption(replay)
    .addHelpText(
      'after',
      examples([
        'STRIPE_API_KEY=rk_live_… hookgate replay --endpoint stripe --since 2026-11-30T02:00:00Z --until 2026-11-30T04:00:00Z --dry-run',
        'GITHUB_TOKEN=… hookgate replay --endpoint github --since 6h',
      ]),
    )
    .action(async (options: unknown) => (await import('./commands/replay.ts')).replayCommand(options));

  const reconcile = addConfigOption(
    program
      .command('reconcile')
      .description(
        "run one reconciliation now (list the provider's events since the watermark, fill what is missing), or `status`",
      )
      .argument(
        '[status]',
        "`status`: each reconciling endpoint's watermark (gap-free until), last run, found and filled",
      )
      .option('--endpoint <name>', 'endpoint to reconcile (its reconcile and replay settings say how)')
      .option('--since <when>', 'list from here instead of the watermark minus lookback')
      .option('--dry-run', 'count what is missing; store nothing, move nothing')
      .option(
        '--force',
        'allow a listing starting before the dedupe horizon (events whose keys are gone are filled and applied again); audited',
      )
      .option('--json', 'print the result as JSON'),
  );
  addActorOption(reconcile)
    .addHelpText(
      'after',
      examples([
        'STRIPE_API_KEY=rk_live_… hookgate reconcile --endpoint stripe --dry-run',
        'hookgate reconcile status',
      ]),
    )
    .action(async (what: string | undefined, options: unknown) => {
      const { reconcileCommand, reconcileStatusCommand } = await import('./commands/reconcile.ts');
      return what === undefined
        ? reconcileCommand(options)
        : reconcileStatusCommand({ ...(options as object), what });
    });

  const prune = addConfigOption(
    program
      .command('prune')
      .description('delete settled inbox rows (and delivered destination deliveries) older than a window')
      .option('--older-than <duration>', 'inbox retention for processed/ignored/stale rows', '30d')
      .option('--deliveries-older-than <duration>', 'retention for delivered destination deliveries', '90d')
      .option('--audit-older-than <duration>', 'retention for the audit trail (default 365d)')
      .option(
        '--quarantine-older-than <duration>',
        'retention for released and dropped quarantine rows, after their release or drop (default 7d)',
      )
      .option('--batch <n>', 'rows deleted per statement, each its own transaction (100..100000)', '5000')
      .option(
        '--pause <ms>',
        'milliseconds to wait between batches (0..60000), leaving the database to the ack path',
        '0',
      )
      .option('--dry-run', 'count what would be deleted; delete nothing')
      .option('--force', 'allow a window under 3 days (payloads gone before the providers stop retrying)')
      .option('--json', 'print the result as JSON'),
  );
  addActorOption(prune)
    .addHelpText(
      'after',
      examples([
        'hookgate prune --older-than 30d --dry-run',
        'hookgate prune --older-than 30d',
        'hookgate prune --older-than 30d --batch 1000 --pause 100   # paced: keeps ack p99 flat',
      ]),
    )
    .action(async (options: unknown) => (await import('./commands/prune.ts')).pruneCommand(options));

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
    .action(async (options: unknown) => (await import('./commands/verify.ts')).verifyCommand(options));

  addOperationsCommands(program);
  addDestinationCommands(program);
  return program;
}

function checkEnvironment(env: NodeJS.ProcessEnv): void {
  const level = env.LOG_LEVEL?.trim();
  if (level && !LOG_LEVELS.includes(level)) {
    throw new HookgateError(
      'env_invalid',
      `LOG_LEVEL="${level}" is not a log level; use one of ${LOG_LEVELS.join(', ')}.`,
    );
  }
  const format = env.LOG_FORMAT?.trim();
  if (format && format !== 'json' && format !== 'text') {
    throw new HookgateError(
      'env_invalid',
      `LOG_FORMAT="${format}" is not a log format; use json (the default: one JSON object per line) or text (for a terminal).`,
    );
  }
}

/**
 * Runs one command line (`argv` without node and the script) and returns its exit code. Every
 * failure is one coded line on `output.err`; a stack only for an error nobody anticipated.
 * Commands that keep running (serve) return 0 once they are up.
 */
export async function runCli(argv: readonly string[], output: CliOutput = PROCESS_OUTPUT): Promise<number> {
  try {
    checkEnvironment(process.env);
    await buildProgram(output).parseAsync([...argv], { from: 'user' });
    return EXIT_OK;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and --version are "errors" only to commander; its usage messages are already out.
      const quiet = ['commander.helpDisplayed', 'commander.version', 'commander.help'];
      return quiet.includes(error.code) ? EXIT_OK : EXIT_USAGE;
    }
    const { classify } = await import('./support/exit.ts');
    const { line, exitCode, stack } = classify(error);
    output.err(`hookgate: ${line}\n`);
    if (stack) output.err(`${stack}\n`);
    return exitCode;
  }
}
