import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The migration files as hookgate reads them (migrations/NNNN_name.sql), apart from migrate.ts so
// that the release tooling reads them without loading the database clients.

export const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), '../../../migrations');

/**
 * A contract step (docs/releases.md) names the release whose code stopped using what it removes:
 * that release and later ones run on the schema it leaves; earlier ones do not.
 */
const CONTRACT = /^-- hookgate: contract, unused since (\d+\.\d+\.\d+)\b/m;

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
  /** A contract step's release that stopped using what it removes; null for the others. */
  readonly compatibleFrom: string | null;
}

export function readMigrations(dir: string = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((file) => /^\d{4}_[a-z0-9_]+\.sql$/.test(file))
    .sort()
    .map((file) => {
      const sql = readFileSync(join(dir, file), 'utf8');
      return {
        version: Number(file.slice(0, 4)),
        name: file.slice(5, -4),
        sql,
        compatibleFrom: CONTRACT.exec(sql)?.[1] ?? null,
      };
    });
}

/** A migration as operators see it everywhere (`0001_baseline`): its file name without `.sql`. */
export function migrationName(migration: Pick<Migration, 'version' | 'name'>): string {
  return `${String(migration.version).padStart(4, '0')}_${migration.name}`;
}
