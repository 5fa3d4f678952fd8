import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../services/cli/program.ts';
import { runCliInProcess } from '../support/cli.ts';

// Every command an operator can run shows at least one example in its --help.
function leaves(command: Command, path: string[] = []): string[][] {
  if (command.commands.length === 0) return [path];
  return command.commands.flatMap((child) => leaves(child, [...path, child.name()]));
}

const commands = leaves(buildProgram({ out: () => {}, err: () => {} })).filter((path) => path.length > 0);

describe('--help', () => {
  it.each(commands.map((path) => [path.join(' '), path] as const))(
    '%s shows examples',
    async (_name, path) => {
      const help = await runCliInProcess([...path, '--help'], {});
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(/Examples:\n\s+\$ .*hookgate /);
    },
  );
});
