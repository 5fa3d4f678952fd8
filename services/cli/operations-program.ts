import type { Command } from 'commander';
import { auditCommand } from './commands/audit.ts';
import { addConfigOption } from './support/options.ts';

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
      .description('operator actions (requeue, discard, pause, resume, replay, prune), newest first')
      .option('--since <when>', 'only actions at or after: a duration (24h) or a timestamp')
      .option('--endpoint <name>', 'only actions on this endpoint')
      .option('--command <name>', 'only this command (requeue, discard, …)')
      .option('--limit <n>', 'at most this many rows', '100')
      .option('--json', 'print the rows as JSON'),
  )
    .addHelpText(
      'after',
      examples(['hookgate audit --since 24h', 'hookgate audit --endpoint stripe --command discard --json']),
    )
    .action((options: unknown) => auditCommand(options));
}
