import type { Command } from 'commander';

/** `--config`; what it defaults to is support/options.ts's `configPath`. */
export function addConfigOption(command: Command): Command {
  return command.option(
    '--config <file>',
    'configuration file (YAML); default $HOOKGATE_CONFIG, else ./hookgate.yaml',
  );
}
