import { createLogger } from '../../core/logging.ts';
import { openDatabase, runMigrations } from '../database.ts';

export async function migrateCommand(): Promise<void> {
  const logger = createLogger();
  const database = await openDatabase(logger);
  try {
    await runMigrations(database.url, logger);
  } finally {
    await database.embedded?.stop();
  }
}
