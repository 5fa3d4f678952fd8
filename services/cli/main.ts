#!/usr/bin/env node
// First: starts tracing (when OTEL_* asks for it) before pg, express and http load.
import '../core/tracing-init.ts';
import { Command, Option } from 'commander';
import { ZodError } from 'zod';
import { describeError, HookgateError } from '../core/errors.ts';
import { eventsCommand } from './commands/events.ts';
import { migrateCommand } from './commands/migrate.ts';
import { pruneCommand } from './commands/prune.ts';
import { requeueCommand } from './commands/requeue.ts';
import { sendTestCommand } from './commands/send-test.ts';
import { serveCommand } from './commands/serve.ts';
import { statsCommand } from './commands/stats.ts';
import { verifyCommand } from './commands/verify.ts';

const DEFAULT_CONFIG = process.env.HOOKGATE_CONFIG ?? 'hookgate.yaml';

const program = new Command()
  .name('hookgate')
  .description('Verified, exactly-once webhook ingestion into PostgreSQL.')
  .showHelpAfterError();

program
  .command('serve')
  .description(
    'run the gateway, the worker, or both (DATABASE_URL unset: embedded PostgreSQL under ./.hookgate/)',
  )
  .addOption(
    new Option('--role <role>', 'what this process runs')
      .choices(['gateway', 'worker', 'all'])
      .default('all'),
  )
  .option('--config <file>', 'configuration file (YAML)', DEFAULT_CONFIG)
  .action((options: unknown) => serveCommand(options));

program
  .command('migrate')
  .description("apply hookgate's migrations and pg-boss's schema (safe to run concurrently)")
  .action(() => migrateCommand());

program
  .command('send-test')
  .description("sign a sample event with the endpoint's own scheme and post it to a running gateway")
  .requiredOption('--endpoint <name>', 'endpoint to send to')
  .option('--config <file>', 'configuration file (YAML)', DEFAULT_CONFIG)
  .option('--type <type>', 'event type of the sample')
  .option('--duplicates <n>', 'send the same event this many more times', '1')
  .option('--url <url>', 'gateway base URL (default http://127.0.0.1:$PORT)')
  .option(
    '--wait <duration>',
    'then wait up to this long (e.g. 60s) until a worker has processed it (reads DATABASE_URL)',
  )
  .action((options: unknown) => sendTestCommand(options));

program
  .command('requeue')
  .description('move parked/dead events back to pending and queue them again')
  .requiredOption('--endpoint <name>', 'endpoint whose events to requeue')
  .addOption(new Option('--status <status>', 'only this status (default: both)').choices(['parked', 'dead']))
  .option('--event-id <id>', 'only this event')
  .option('--orphans', 'instead: re-send a job for pending events whose job is gone or completed')
  .option('--config <file>', 'configuration file (YAML)', DEFAULT_CONFIG)
  .action((options: unknown) => requeueCommand(options));

program
  .command('events')
  .description("list an endpoint's inbox rows, newest first (one JSON line each)")
  .requiredOption('--endpoint <name>', 'endpoint to list')
  .option('--status <status>', 'only this status')
  .option('--limit <n>', 'at most this many rows', '100')
  .action((options: unknown) => eventsCommand(options));

program
  .command('prune')
  .description('delete settled inbox rows and settled downstream deliveries older than the retention windows')
  .option('--older-than <duration>', 'inbox retention for processed/ignored/stale rows (at least 3d)', '30d')
  .option('--outbox-older-than <duration>', 'retention for delivered downstream effects (at least 3d)', '90d')
  .option('--chunk <n>', 'rows deleted per statement', '5000')
  .action((options: unknown) => pruneCommand(options));

program
  .command('stats')
  .description('backlog per endpoint and status (pending, parked, dead) with the oldest age')
  .action(() => statsCommand());

program
  .command('verify')
  .description(
    'after a load run drains: every acknowledged delivery settled once, nothing pending, payments booked, no entity behind',
  )
  .option(
    '--sent <file>',
    'acknowledged deliveries, one JSON line each (the load driver or k6 --console-output)',
  )
  .option('--json', 'print the report as one JSON object')
  .option('--config <file>', 'configuration file: its handlers say which endpoints bill and which project')
  .action((options: unknown) => verifyCommand(options));

function fail(error: unknown): never {
  if (error instanceof ZodError) {
    const flag = (path: readonly PropertyKey[]) =>
      path.map((key) => String(key).replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)).join('.');
    const lines = error.issues.map((issue) => `--${flag(issue.path)}: ${issue.message}`);
    process.stderr.write(`hookgate: usage_invalid: ${lines.join('; ')}\n`);
  } else {
    process.stderr.write(`hookgate: ${describeError(error)}\n`);
    if (!(error instanceof HookgateError) && error instanceof Error && error.stack) {
      process.stderr.write(`${error.stack}\n`);
    }
  }
  process.exit(error instanceof HookgateError || error instanceof ZodError ? 2 : 1);
}

program.parseAsync(process.argv).catch(fail);
