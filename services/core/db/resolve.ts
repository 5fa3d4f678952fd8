import { type EmbeddedDatabase, startEmbeddedPostgres } from './embedded.ts';

export interface ResolvedDatabase {
  readonly url: string;
  /** Set when hookgate started its own PostgreSQL because DATABASE_URL was not set. */
  readonly embedded: EmbeddedDatabase | null;
}

export const EMBEDDED_DIR = '.hookgate';

export async function resolveDatabase(env: NodeJS.ProcessEnv = process.env): Promise<ResolvedDatabase> {
  const url = env.DATABASE_URL?.trim();
  if (url) return { url, embedded: null };
  const embedded = await startEmbeddedPostgres(EMBEDDED_DIR);
  return { url: embedded.url, embedded };
}
