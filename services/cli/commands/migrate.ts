import { z } from 'zod';
import { createLogger } from '../../core/logging.ts';
import { unappliedMigrations } from '../../core/migrate/migrate.ts';
import { describeDatabase, openDatabase, openExistingDatabase, runMigrations } from '../database.ts';
import { checkConfiguration } from '../support/config-checks.ts';
import { printJson } from '../support/format.ts';
import { configPath } from '../support/options.ts';
import { writeErr, writeOut } from '../support/terminal-text.ts';

export const migrateOptionsSchema = z.strictObject({
  dryRun: z.boolean().optional(),
  json: z.boolean().optional(),
  config: z.string().min(1).optional(),
  checkConfig: z.boolean().optional(),
  createRoles: z.boolean().optional(),
});

/** `hookgate migrate [--dry-run]`: apply (or list) what this database lacks. */
export async function migrateCommand(raw: unknown): Promise<void> {
  const options = migrateOptionsSchema.parse(raw);
  // Before any change: a configuration serve would refuse stops here (the chart's hook Job).
  if (options.checkConfig) {
    const file = configPath(options.config);
    checkConfiguration(file);
    writeErr(`hookgate: ${file} is valid\n`);
  }
  const logger = createLogger(undefined, 2);
  const database = options.dryRun ? await openExistingDatabase() : await openDatabase(logger);
  try {
    const where = describeDatabase(database);
    if (options.dryRun) {
      const pending = await unappliedMigrations(database.url);
      if (options.json) printJson({ database: where, dry_run: true, would_apply: pending });
      else if (pending.length === 0) writeOut(`${where} is up to date; nothing to apply.\n`);
      else
        writeOut(
          `Would apply to ${where} (and install or upgrade the pg-boss schema):\n${pending.map((name) => `  ${name}\n`).join('')}`,
        );
      return;
    }
    const applied = await runMigrations(database.url, logger, { createRoles: options.createRoles === true });
    if (options.json) printJson({ database: where, applied });
    else if (applied.length === 0) writeOut(`${where} was already up to date.\n`);
    else writeOut(`Applied to ${where}:\n${applied.map((name) => `  ${name}\n`).join('')}`);
  } finally {
    await database.embedded?.stop();
  }
}
