import type { Queryable } from '../db/pool.ts';

// When each access token was last used (hookgate.api_token_use, created by the baseline migration): the one owner of
// the table's SQL. Written at most once a minute per token (the statement changes a row only when
// its time is a minute old; callers also skip the statement within the minute), read by the API's
// and the CLI's token lists.

/** How stale a token's recorded last use may get. */
export const TOKEN_USE_RESOLUTION_MS = 60_000;

const RECORD = `
  INSERT INTO hookgate.api_token_use AS u (token, last_used_at, last_source)
  VALUES ($1, $2::timestamptz, left($3, 100))
  ON CONFLICT (token) DO UPDATE
     SET last_used_at = EXCLUDED.last_used_at, last_source = EXCLUDED.last_source
   WHERE u.last_used_at < EXCLUDED.last_used_at - make_interval(secs => $4::float8 / 1000)`;

export async function recordTokenUse(
  db: Queryable,
  use: { readonly token: string; readonly at: Date; readonly source: string | null },
): Promise<void> {
  await db.query(RECORD, [use.token, use.at, use.source, TOKEN_USE_RESOLUTION_MS]);
}

export interface TokenUse {
  readonly token: string;
  readonly last_used_at: Date;
  readonly last_source: string | null;
}

const READ = `
  SELECT token, last_used_at, last_source FROM hookgate.api_token_use WHERE token = ANY($1::text[])`;

export async function tokenUses(db: Queryable, tokens: readonly string[]): Promise<Map<string, TokenUse>> {
  if (tokens.length === 0) return new Map();
  const rows = (await db.query<TokenUse>(READ, [tokens])).rows;
  return new Map(rows.map((row) => [row.token, row]));
}

const FORGET = `DELETE FROM hookgate.api_token_use WHERE NOT (token = ANY($1::text[]))`;

/** Deletes the rows of tokens the configuration no longer names (at most the configured count remain). */
export async function forgetOtherTokens(db: Queryable, configured: readonly string[]): Promise<number> {
  return (await db.query(FORGET, [configured])).rowCount ?? 0;
}
