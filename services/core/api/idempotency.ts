import type { Queryable } from '../db/pool.ts';

// The management API's Idempotency-Key records (hookgate.api_idempotency, created by the baseline
// migration): the one
// owner of the table's SQL. An action's POST first claims (token, key); the claimer acts and then
// completes the row with its answer; a retry of the same request finds the answer and gets it back
// without acting. Times come from the caller (`now`), so tests move them instead of waiting.

export type KeyClaim =
  /** This request acts: nobody used the key (or its use expired, or its claimer died). */
  | { readonly kind: 'claimed' }
  /** The key's first use answered: this is its answer, sent again. */
  | { readonly kind: 'answered'; readonly status: number; readonly answer: unknown }
  /** The key's first use is still acting. */
  | { readonly kind: 'in_progress' }
  /** The key was used for another request (another path, query or body). */
  | { readonly kind: 'reused' };

export interface KeyRequest {
  /** The access token's name: keys are per token. */
  readonly token: string;
  readonly key: string;
  /** SHA-256 of the request (method, path and query, body). */
  readonly digest: Buffer;
  readonly now: Date;
  /** How long a key and its answer are kept (console.api.idempotencyTtl). */
  readonly ttlMs: number;
  /** How long a claim holds the key before another request may take it over. */
  readonly lockMs: number;
}

/**
 * Inserts the claim, or takes over a row whose use expired (a new use of an old key) or whose
 * claimer let its lock run out with no answer (it died mid-action; the same request may retry:
 * every action is safe to run again, as its CLI command is).
 */
const CLAIM = `
  INSERT INTO hookgate.api_idempotency AS k (token, key, request_digest, created_at, locked_until)
  VALUES ($1, $2, $3, $4::timestamptz, $4::timestamptz + make_interval(secs => $6::float8 / 1000))
  ON CONFLICT (token, key) DO UPDATE
     SET request_digest = EXCLUDED.request_digest, created_at = EXCLUDED.created_at,
         locked_until = EXCLUDED.locked_until, status = NULL, answer = NULL
   WHERE k.created_at < $4::timestamptz - make_interval(secs => $5::float8 / 1000)
      OR (k.status IS NULL AND k.locked_until < $4::timestamptz AND k.request_digest = EXCLUDED.request_digest)
  RETURNING true AS claimed`;

const READ = `
  SELECT request_digest, status, answer FROM hookgate.api_idempotency WHERE token = $1 AND key = $2`;

export async function claimKey(db: Queryable, request: KeyRequest): Promise<KeyClaim> {
  const params = [request.token, request.key, request.digest, request.now, request.ttlMs, request.lockMs];
  if ((await db.query(CLAIM, params)).rows.length > 0) return { kind: 'claimed' };
  const row = (
    await db.query<{ request_digest: Buffer; status: number | null; answer: unknown }>(READ, [
      request.token,
      request.key,
    ])
  ).rows[0];
  // Deleted between the two statements (expired and pruned): the key is free again.
  if (!row)
    return (await db.query(CLAIM, params)).rows.length > 0 ? { kind: 'claimed' } : { kind: 'in_progress' };
  if (!row.request_digest.equals(request.digest)) return { kind: 'reused' };
  if (row.status === null) return { kind: 'in_progress' };
  return { kind: 'answered', status: row.status, answer: row.answer };
}

const COMPLETE = `
  UPDATE hookgate.api_idempotency SET status = $3, answer = $4::jsonb, locked_until = NULL
   WHERE token = $1 AND key = $2 AND status IS NULL`;

/** Stores the answer of the action the claim ran. */
export async function completeKey(
  db: Queryable,
  key: { readonly token: string; readonly key: string },
  status: number,
  answer: unknown,
): Promise<void> {
  await db.query(COMPLETE, [key.token, key.key, status, JSON.stringify(answer)]);
}

const RELEASE = `DELETE FROM hookgate.api_idempotency WHERE token = $1 AND key = $2 AND status IS NULL`;

/** Gives the key up unanswered (the action failed before it could act): a retry acts. */
export async function releaseKey(
  db: Queryable,
  key: { readonly token: string; readonly key: string },
): Promise<void> {
  await db.query(RELEASE, [key.token, key.key]);
}

/** One batch of expired rows, oldest first through api_idempotency_created_idx. */
const PRUNE_BATCH = `
  DELETE FROM hookgate.api_idempotency
   WHERE ctid = ANY (ARRAY(
           SELECT ctid FROM hookgate.api_idempotency
            WHERE created_at < $1::timestamptz
            ORDER BY created_at
            LIMIT $2))`;

/** Deletes the keys created before `before`, `batch` rows per statement; returns how many. */
export async function pruneKeys(db: Queryable, before: Date, batch = 1_000): Promise<number> {
  let deleted = 0;
  for (;;) {
    const count = (await db.query(PRUNE_BATCH, [before, batch])).rowCount ?? 0;
    deleted += count;
    if (count < batch) return deleted;
  }
}
