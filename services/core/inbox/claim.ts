import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { HookgateError } from '../errors.ts';
import type { EventIdentity } from '../providers/types.ts';
import { lockApplyJobsFirst, sendApplyJobs } from '../queue/apply-jobs.ts';
import { applyQueue, jobIdFor } from '../queue/names.ts';
import { commitWithWakeup } from '../queue/wakeup.ts';
import {
  CLAIM_IN_ONE_STATEMENT,
  CLAIM_INBOX_ROWS,
  CLAIM_STATEMENT_NAME,
  COUNT_DELIVERIES,
  REDISPATCH_SETTLED_ROWS,
  UNCLAIM_INBOX_ROWS,
} from './claim-sql.ts';

/** A verified delivery ready to be stored. */
export interface Claim {
  readonly endpoint: string;
  readonly provider: string;
  readonly event: EventIdentity;
  /**
   * The verified body as received, one complete JSON value (the gateway parses every body before
   * it claims); PostgreSQL parses it into jsonb.
   */
  readonly body: string;
  readonly traceparent: string | null;
  /** Set when the row did not come as a signed provider delivery (migration 0006). */
  readonly receivedVia?: 'replay_token' | 'api_replay' | null;
  /** The endpoint's `dedupe` mode; `observe` dispatches duplicates again (default `enforce`). */
  readonly dedupe?: 'enforce' | 'observe';
}

export type ClaimOutcome = 'accepted' | 'duplicate';

export type ClaimResult =
  | { readonly ok: true; readonly outcome: ClaimOutcome }
  | { readonly ok: false; readonly error: HookgateError };

/** Where the claim transaction's extra work plugs in (sync-mode apply, tests' fault injection). */
export interface ClaimHooks {
  /** Runs inside the claim transaction after the inbox rows and jobs are written. */
  readonly beforeCommit?: (client: pg.PoolClient, accepted: readonly Claim[]) => Promise<void>;
}

export interface ClaimOptions {
  /**
   * Whether the one-statement claim wakes the workers with its commit (default true). False
   * leaves the wake-up to the caller, who must send one after the commit (the gateway's
   * WakeupThrottle). The transactional claim always sends its own.
   */
  readonly wakeup?: boolean;
}

/** Refused because an earlier job for the same event is running right now (see enqueueJobs). */
const JOB_BUSY = new HookgateError(
  'job_busy',
  'An earlier attempt for this event is still running; it was not accepted. Retry later.',
);

const keyOf = (endpoint: string, eventId: string): string => `${endpoint}\u0000${eventId}`;

function byKey(a: Claim, b: Claim): number {
  if (a.endpoint !== b.endpoint) return a.endpoint < b.endpoint ? -1 : 1;
  if (a.event.eventId === b.event.eventId) return 0;
  return a.event.eventId < b.event.eventId ? -1 : 1;
}

function columns(claims: readonly Claim[]): unknown[] {
  return [
    claims.map((c) => c.endpoint),
    claims.map((c) => c.event.eventId),
    claims.map((c) => c.provider),
    claims.map((c) => c.event.eventType),
    claims.map((c) => c.event.entityType),
    claims.map((c) => c.event.entityId),
    claims.map((c) => c.event.entityVersion),
    claims.map((c) => c.body),
    claims.map((c) => JSON.stringify(c.event.headers)),
    claims.map((c) => c.traceparent),
    // The id is unsigned: the row also gets its body digest (claim-sql.ts, bodyDigestOf).
    claims.map((c) => c.event.idUnsigned === true),
    claims.map((c) => c.receivedVia ?? null),
  ];
}

const json = JSON.stringify;

/** Most values are null (no entity, no traceparent): no call into JSON.stringify for those. */
const jsonOrNull = (value: string | null): string => (value === null ? 'null' : json(value));

/** Each endpoint's fixed fields, serialised once: a batch repeats them for every delivery. */
const endpointFields = new Map<string, { endpoint: string; provider: string; queue: string }>();

/**
 * CLAIM_IN_ONE_STATEMENT's input: one JSON array, one object per claim. The body is embedded as
 * received: it is a complete JSON text (the gateway parsed it), and PostgreSQL parses it into
 * jsonb exactly as it would parse it alone. A body that is not valid JSON makes the statement
 * fail on the data (or on its guard, should it parse as more than one value), and the
 * transactional claim then stores or refuses each delivery alone. The body comes first in its
 * object: json_to_recordset keeps a key's last value, so the keys written after it win over any
 * a malformed body could inject.
 */
export function claimDocument(claims: readonly Claim[]): string {
  const parts: string[] = [];
  for (const [ord, c] of claims.entries()) {
    const e = c.event;
    const key = `${c.endpoint}\u0000${c.provider}`;
    let fixed = endpointFields.get(key);
    if (fixed === undefined) {
      fixed = { endpoint: json(c.endpoint), provider: json(c.provider), queue: json(applyQueue(c.endpoint)) };
      // Endpoints come from the configuration; the bound only guards against misuse.
      if (endpointFields.size >= 1024) endpointFields.clear();
      endpointFields.set(key, fixed);
    }
    // The job id is hex digits and dashes (jobIdFor): nothing to escape.
    parts.push(
      `{"payload":${c.body},"ord":${ord},"endpoint":${fixed.endpoint},"event_id":${json(e.eventId)},"provider":${fixed.provider},` +
        `"event_type":${json(e.eventType)},"entity_type":${jsonOrNull(e.entityType)},"entity_id":${jsonOrNull(e.entityId)},` +
        `"entity_version":${jsonOrNull(e.entityVersion)},"headers":${json(e.headers)},"traceparent":${jsonOrNull(c.traceparent)},` +
        `"digest_body":${e.idUnsigned === true},` +
        `"received_via":${c.receivedVia ? json(c.receivedVia) : 'null'},` +
        `"queue":${fixed.queue},"job_id":"${jobIdFor(c.endpoint, e.eventId)}"}`,
    );
  }
  return `[${parts.join(',')}]`;
}

function sqlState(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : '';
}

/** PostgreSQL refused this one delivery's data (a \u0000 in JSON, a CHECK): retrying cannot help. */
function isDataError(error: unknown): boolean {
  const state = sqlState(error);
  // 22 data, 23 constraints, 54 limits (jsonb nesting too deep): all about this row's content.
  return state.startsWith('22') || state.startsWith('23') || state.startsWith('54');
}

/**
 * Errors that belong to one row (its data, or a trigger raising for it), so the batch is worth
 * retrying row by row. Timeouts, lost connections, deadlocks and resource errors belong to the
 * database, not to a row: retrying each row would wait out the timeout once per row.
 */
function isRowError(error: unknown): boolean {
  return isDataError(error) || sqlState(error).startsWith('P0');
}

function failureFor(error: unknown): HookgateError {
  if (error instanceof HookgateError) return error;
  if (isDataError(error)) {
    return new HookgateError(
      'payload_unstorable',
      `PostgreSQL cannot store this payload: ${(error as Error).message}.`,
    );
  }
  return new HookgateError(
    'database_unavailable',
    'The event could not be stored right now; it was not accepted. Retry later.',
    { cause: error },
  );
}

/**
 * A live job for every accepted claim. Claims whose previous job (same deterministic id) is
 * running right now cannot be promised one: their rows are taken back and they are returned, to
 * be refused with a 503 and redelivered once that attempt has finished.
 */
async function enqueueJobs(
  boss: PgBoss,
  client: pg.PoolClient,
  accepted: readonly Claim[],
): Promise<Set<string>> {
  const byEndpoint = new Map<string, string[]>();
  for (const claim of accepted) {
    const list = byEndpoint.get(claim.endpoint) ?? [];
    list.push(claim.event.eventId);
    byEndpoint.set(claim.endpoint, list);
  }
  const refused = new Set<string>();
  for (const [endpoint, eventIds] of byEndpoint) {
    const { busy } = await sendApplyJobs(boss, client, endpoint, eventIds);
    if (busy.length === 0) continue;
    await client.query(UNCLAIM_INBOX_ROWS, [endpoint, busy]);
    for (const eventId of busy) refused.add(keyOf(endpoint, eventId));
  }
  return refused;
}

/** What a claim attempt settled: rows it created, and deliveries it refused. */
interface Claimed {
  readonly inserted: Set<string>;
  readonly failed: Map<string, HookgateError>;
}

/**
 * The claim in one round trip (CLAIM_IN_ONE_STATEMENT, its own commit). Returns the keys it
 * accepted. Throws what the statement threw (its guard included: a job id still held by an
 * earlier job): nothing was committed then.
 */
async function claimInOneStatement(
  client: pg.PoolClient,
  sorted: readonly Claim[],
  wakeup: boolean,
): Promise<Set<string>> {
  const result = await client.query<{ endpoint: string; event_id: string }>({
    name: CLAIM_STATEMENT_NAME,
    text: CLAIM_IN_ONE_STATEMENT,
    values: [claimDocument(sorted), sorted.length, wakeup],
  });
  return new Set(result.rows.map((row) => keyOf(row.endpoint, row.event_id)));
}

/**
 * The transactional claim: inbox rows, then a live job for each (sendApplyJobs decides about
 * earlier jobs under the same ids), then the hooks, then COMMIT with the wake-up. If the batch
 * statement fails on a row's data, each claim is retried behind its own savepoint so that one
 * unstorable delivery does not fail its neighbours. Throws on errors that are not a row's.
 */
async function claimInTransaction(
  client: pg.PoolClient,
  boss: PgBoss,
  sorted: readonly Claim[],
  hooks: ClaimHooks,
): Promise<Claimed> {
  const failed = new Map<string, HookgateError>();
  let inserted: Set<string>;
  const events = sorted.map((claim) => ({ endpoint: claim.endpoint, eventId: claim.event.eventId }));
  try {
    await client.query('BEGIN');
    await lockApplyJobsFirst(client, events);
    inserted = await insertRows(client, sorted);
  } catch (error) {
    // Anything but a row's error ends the connection (claimBatch), and with it the transaction:
    // a ROLLBACK first would wait out its own timeout on a connection that stopped answering.
    if (sorted.length === 1 || !isRowError(error)) throw error;
    await client.query('ROLLBACK');
    await client.query('BEGIN');
    await lockApplyJobsFirst(client, events);
    inserted = new Set();
    for (const claim of sorted) {
      const key = keyOf(claim.endpoint, claim.event.eventId);
      await client.query('SAVEPOINT claim');
      try {
        for (const row of await insertRows(client, [claim])) inserted.add(row);
        await client.query('RELEASE SAVEPOINT claim');
      } catch (rowError) {
        await client.query('ROLLBACK TO SAVEPOINT claim');
        failed.set(key, failureFor(rowError));
      }
    }
  }
  const accepted = sorted.filter((c) => inserted.has(keyOf(c.endpoint, c.event.eventId)));
  // A batch may carry the same key twice; only its first copy is "accepted".
  const acceptedOnce = new Set<string>();
  const firsts = accepted.filter((c) => {
    const key = keyOf(c.endpoint, c.event.eventId);
    if (acceptedOnce.has(key)) return false;
    acceptedOnce.add(key);
    return true;
  });
  const busy = await enqueueJobs(boss, client, firsts);
  for (const key of busy) failed.set(key, JOB_BUSY);
  const kept = busy.size === 0 ? firsts : firsts.filter((c) => !busy.has(keyOf(c.endpoint, c.event.eventId)));
  if (hooks.beforeCommit) await hooks.beforeCommit(client, kept);
  const results = resultsFor(sorted, inserted, failed);
  const redispatched = await redispatchObserved(boss, client, sorted, results);
  await countDeliveries(client, sorted, results);
  await client.query(commitWithWakeup([...kept.map((claim) => claim.endpoint), ...redispatched]));
  return { inserted, failed };
}

/** Each claim's answer: refused, accepted (the first copy of a key this claim created), or duplicate. */
function resultsFor(
  claims: readonly Claim[],
  inserted: ReadonlySet<string>,
  failed: ReadonlyMap<string, HookgateError>,
): ClaimResult[] {
  const reported = new Set<string>();
  return claims.map((claim): ClaimResult => {
    const key = keyOf(claim.endpoint, claim.event.eventId);
    const failure = failed.get(key);
    if (failure) return { ok: false, error: failure };
    if (inserted.has(key) && !reported.has(key)) {
      reported.add(key);
      return { ok: true, outcome: 'accepted' };
    }
    return { ok: true, outcome: 'duplicate' };
  });
}

/**
 * The one-statement claim writes plain rows only: observe-mode duplicates (dispatched again) and
 * events pulled back by `hookgate replay` (not counted as deliveries) take the transactional claim.
 */
function fitsOneStatement(claim: Claim): boolean {
  return claim.dedupe !== 'observe' && claim.receivedVia !== 'api_replay';
}

/**
 * Claims a batch: inbox rows and their jobs commit together or not at all, before any answer.
 * Without hooks the whole claim is one statement (one round trip, see CLAIM_IN_ONE_STATEMENT);
 * what it cannot decide alone (an earlier job under the same id that is finished or running),
 * and any batch whose statement failed on a row, goes through the transactional claim. Hooks
 * (sync-mode apply) always take the transactional claim. Results are in the order of `claims`.
 */
export async function claimBatch(
  pool: pg.Pool,
  boss: PgBoss,
  claims: readonly Claim[],
  hooks: ClaimHooks = {},
  options: ClaimOptions = {},
): Promise<ClaimResult[]> {
  // A fixed lock order across concurrent batches prevents deadlocks on shared keys.
  const sorted = [...claims].sort(byKey);
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    const failure = failureFor(error);
    return claims.map(() => ({ ok: false, error: failure }));
  }
  let broken = false;
  try {
    if (!hooks.beforeCommit && sorted.every(fitsOneStatement)) {
      const inserted = await claimInOneStatement(client, sorted, options.wakeup ?? true).catch(
        (error: unknown) => {
          // A row's data, or the guard (a job id still held): the transactional claim decides.
          if (isRowError(error)) return null;
          throw error;
        },
      );
      if (inserted) return resultsFor(claims, inserted, new Map());
    }
    const { inserted, failed } = await claimInTransaction(client, boss, sorted, hooks);
    return resultsFor(claims, inserted, failed);
  } catch (error) {
    broken = true;
    const failure = failureFor(error);
    return claims.map(() => ({ ok: false, error: failure }));
  } finally {
    // A connection that saw an error mid-transaction is discarded rather than reused, and its
    // session's end rolls the transaction back: no ROLLBACK, which on a connection that stopped
    // answering (a partition) would first wait out its own timeout.
    client.release(broken);
  }
}

async function insertRows(client: pg.PoolClient, claims: readonly Claim[]): Promise<Set<string>> {
  const result = await client.query<{ endpoint: string; event_id: string }>(
    CLAIM_INBOX_ROWS,
    columns(claims),
  );
  return new Set(result.rows.map((row) => keyOf(row.endpoint, row.event_id)));
}

/** Adds the batch's answered deliveries to the per-minute counts, in the claim's transaction. */
async function countDeliveries(
  client: pg.PoolClient,
  claims: readonly Claim[],
  results: readonly ClaimResult[],
): Promise<void> {
  const counts = new Map<string, { accepted: number; duplicate: number }>();
  results.forEach((result, index) => {
    // Events pulled back from a provider's API by `hookgate replay` are not deliveries.
    if (!result.ok || claims[index]!.receivedVia === 'api_replay') return;
    const endpoint = claims[index]!.endpoint;
    const count = counts.get(endpoint) ?? { accepted: 0, duplicate: 0 };
    count[result.outcome] += 1;
    counts.set(endpoint, count);
  });
  if (counts.size === 0) return;
  const endpoints = [...counts.keys()].sort();
  await client.query(COUNT_DELIVERIES, [
    endpoints,
    endpoints.map((endpoint) => counts.get(endpoint)!.accepted),
    endpoints.map((endpoint) => counts.get(endpoint)!.duplicate),
  ]);
}

/**
 * `dedupe: observe`: duplicates of settled events get a fresh apply job in the claim's
 * transaction. The row lock is taken before the job is sent, so a job that is still running
 * has either committed (its job is finished and replaced) or will find the row pending and
 * apply it: either way the duplicate is dispatched once more.
 */
async function redispatchObserved(
  boss: PgBoss,
  client: pg.PoolClient,
  claims: readonly Claim[],
  results: readonly ClaimResult[],
): Promise<string[]> {
  const byEndpoint = new Map<string, Set<string>>();
  results.forEach((result, index) => {
    const claim = claims[index]!;
    if (!result.ok || result.outcome !== 'duplicate' || claim.dedupe !== 'observe') return;
    const ids = byEndpoint.get(claim.endpoint) ?? new Set<string>();
    ids.add(claim.event.eventId);
    byEndpoint.set(claim.endpoint, ids);
  });
  const redispatched: string[] = [];
  for (const endpoint of [...byEndpoint.keys()].sort()) {
    const ids = [...byEndpoint.get(endpoint)!].sort();
    const reset = await client.query<{ event_id: string }>(REDISPATCH_SETTLED_ROWS, [endpoint, ids]);
    if (reset.rows.length > 0) redispatched.push(endpoint);
    if (reset.rows.length > 0)
      await sendApplyJobs(
        boss,
        client,
        endpoint,
        reset.rows.map((row) => row.event_id),
      );
  }
  return redispatched;
}
