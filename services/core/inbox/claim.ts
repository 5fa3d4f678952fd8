import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { executorFor } from '../db/executor.ts';
import { HookgateError } from '../errors.ts';
import type { EventIdentity } from '../providers/types.ts';
import { type ApplyJobData, applyQueue } from '../queue/names.ts';
import { commitWithWakeup } from '../queue/wakeup.ts';
import {
  CLAIM_IN_ONE_STATEMENT,
  CLAIM_INBOX_ROWS,
  CLAIM_STATEMENT_NAME,
  COUNT_DELIVERIES,
  REOPEN_SETTLED_ROWS,
} from './claim-sql.ts';
import { dispatchEvents, EVENTS_PER_JOB } from './dispatch.ts';
import { insertRawBodies } from './raw-bodies.ts';

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
  /** Set when the row did not come as a signed provider delivery. */
  readonly receivedVia?: 'replay_token' | 'api_replay' | 'api_reconcile' | null;
  /** The endpoint's `dedupe` mode; `observe` dispatches duplicates again (default `enforce`). */
  readonly dedupe?: 'enforce' | 'observe';
  /** The endpoint's `payloadSearch`: the row is marked for the console's payload index (payload_search). */
  readonly payloadSearch?: boolean;
  /**
   * The original bytes and pass-through headers, kept (hookgate.inbox_raw) only for endpoints
   * with a `body: raw` destination; absent or null: nothing kept.
   */
  readonly raw?: { readonly body: Buffer; readonly headers: Readonly<Record<string, string>> } | null;
}

export type ClaimOutcome = 'accepted' | 'duplicate';

export type ClaimResult =
  | { readonly ok: true; readonly outcome: ClaimOutcome }
  | { readonly ok: false; readonly error: HookgateError };

/** Where the claim transaction's extra work plugs in (sync-mode apply, tests' fault injection). */
export interface ClaimHooks {
  /** Runs inside the claim transaction after the inbox rows and jobs are written. */
  readonly beforeCommit?: (client: pg.PoolClient, accepted: readonly Claim[]) => Promise<void>;
  /**
   * Endpoints whose rows `beforeCommit` applies in the claim itself (sync mode): they get no
   * apply job. Every other accepted row is dispatched with the claim.
   */
  readonly appliesInClaim?: (endpoint: string) => boolean;
}

export interface ClaimOptions {
  /**
   * Most events one apply job carries (default 100): the workers' `worker.batchSize`, so that a
   * worker holds no more events than it applies in one transaction (a lost worker costs an
   * attempt only to the events it had in flight).
   */
  readonly eventsPerJob?: number;
  /**
   * Whether the one-statement claim wakes the workers with its commit (default true). False
   * leaves the wake-up to the caller, who must send one after the commit (the gateway's
   * WakeupThrottle). The transactional claim always sends its own.
   */
  readonly wakeup?: boolean;
}

const keyOf = (endpoint: string, eventId: string): string => `${endpoint}\u0000${eventId}`;

function byKey(a: Claim, b: Claim): number {
  if (a.endpoint !== b.endpoint) return a.endpoint < b.endpoint ? -1 : 1;
  if (a.event.eventId === b.event.eventId) return 0;
  return a.event.eventId < b.event.eventId ? -1 : 1;
}

/** Each claim's apply job: the id its row carries (null: applied in the claim). */
type DispatchJobs = ReadonlyMap<Claim, string | null>;

/**
 * The batch's apply jobs: per endpoint, one for every `perJob` of its claims (so that no job
 * carries more events than a worker applies in one transaction), none for endpoints applied in
 * the claim.
 */
function dispatchJobsFor(claims: readonly Claim[], hooks: ClaimHooks, perJob: number): DispatchJobs {
  const jobs = new Map<Claim, string | null>();
  const current = new Map<string, { id: string; count: number }>();
  for (const claim of claims) {
    if (hooks.appliesInClaim?.(claim.endpoint)) {
      jobs.set(claim, null);
      continue;
    }
    let job = current.get(claim.endpoint);
    if (!job || job.count >= perJob) {
      job = { id: randomUUID(), count: 0 };
      current.set(claim.endpoint, job);
    }
    job.count += 1;
    jobs.set(claim, job.id);
  }
  return jobs;
}

function columns(claims: readonly Claim[], jobs: DispatchJobs): unknown[] {
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
    claims.map((c) => jobs.get(c) ?? null),
    // Null, not false, when off: a null costs the row a bit of its null bitmap.
    claims.map((c) => (c.payloadSearch === true ? true : null)),
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
export function claimDocument(
  claims: readonly Claim[],
  jobs: DispatchJobs = dispatchJobsFor(claims, {}, EVENTS_PER_JOB),
): string {
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
    // The job id is hex digits and dashes (a UUID): nothing to escape.
    const job = jobs.get(c) ?? null;
    parts.push(
      `{"payload":${c.body},"ord":${ord},"endpoint":${fixed.endpoint},"event_id":${json(e.eventId)},"provider":${fixed.provider},` +
        `"event_type":${json(e.eventType)},"entity_type":${jsonOrNull(e.entityType)},"entity_id":${jsonOrNull(e.entityId)},` +
        `"entity_version":${jsonOrNull(e.entityVersion)},"headers":${json(e.headers)},"traceparent":${jsonOrNull(c.traceparent)},` +
        `"digest_body":${e.idUnsigned === true},` +
        `"received_via":${c.receivedVia ? json(c.receivedVia) : 'null'},` +
        `"payload_search":${c.payloadSearch === true ? 'true' : 'null'},` +
        `"queue":${fixed.queue},"dispatch_job":${job === null ? 'null' : `"${job}"`}` +
        // base64 has nothing to escape; only endpoints with a `body: raw` destination pay for it.
        // Written as null otherwise, after the body as every other key (see above).
        (c.raw
          ? `,"raw_body":"${c.raw.body.toString('base64')}","raw_headers":${json(c.raw.headers)}}`
          : ',"raw_body":null}'),
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
 * The apply jobs of a transactional claim: one per endpoint with accepted rows, under the id those
 * rows carry (their `dispatch_job`), naming them in the claim's order.
 */
async function insertApplyJobs(
  boss: PgBoss,
  client: pg.PoolClient,
  accepted: readonly Claim[],
  jobs: DispatchJobs,
): Promise<void> {
  const byJob = new Map<string, { endpoint: string; eventIds: string[] }>();
  for (const claim of accepted) {
    const id = jobs.get(claim);
    if (!id) continue;
    const job = byJob.get(id) ?? { endpoint: claim.endpoint, eventIds: [] };
    job.eventIds.push(claim.event.eventId);
    byJob.set(id, job);
  }
  const db = executorFor(client);
  for (const [id, { endpoint, eventIds }] of byJob) {
    const data: ApplyJobData = { endpoint, eventIds };
    const created = await boss.insert(applyQueue(endpoint), [{ id, data }], { db, returnId: true });
    if ((created ?? []).length !== 1) {
      throw new HookgateError(
        'job_insert_skipped',
        `pg-boss created no apply job for ${eventIds.length} event(s) of ${endpoint}; nothing was accepted.`,
      );
    }
  }
}

/** What a claim attempt settled: rows it created, and deliveries it refused. */
interface Claimed {
  readonly inserted: Set<string>;
  readonly failed: Map<string, HookgateError>;
}

/**
 * The claim in one round trip (CLAIM_IN_ONE_STATEMENT, its own commit). Returns the keys it
 * accepted. Throws what the statement threw (its guard included): nothing was committed then.
 */
async function claimInOneStatement(
  client: pg.PoolClient,
  sorted: readonly Claim[],
  wakeup: boolean,
  perJob: number,
): Promise<Set<string>> {
  const result = await client.query<{ endpoint: string; event_id: string }>({
    name: CLAIM_STATEMENT_NAME,
    text: CLAIM_IN_ONE_STATEMENT,
    values: [claimDocument(sorted, dispatchJobsFor(sorted, {}, perJob)), sorted.length, wakeup],
  });
  return new Set(result.rows.map((row) => keyOf(row.endpoint, row.event_id)));
}

/**
 * The transactional claim: inbox rows, then one apply job per endpoint naming its accepted rows,
 * then the hooks, then COMMIT with the wake-up. If the batch statement fails on a row's data,
 * each claim is retried behind its own savepoint so that one unstorable delivery does not fail
 * its neighbours. Throws on errors that are not a row's.
 */
async function claimInTransaction(
  client: pg.PoolClient,
  boss: PgBoss,
  sorted: readonly Claim[],
  hooks: ClaimHooks,
  perJob: number,
): Promise<Claimed> {
  const failed = new Map<string, HookgateError>();
  let inserted: Set<string>;
  const jobs = dispatchJobsFor(sorted, hooks, perJob);
  try {
    await client.query('BEGIN');
    inserted = await insertRows(client, sorted, jobs);
  } catch (error) {
    // Anything but a row's error ends the connection (claimBatch), and with it the transaction:
    // a ROLLBACK first would wait out its own timeout on a connection that stopped answering.
    if (sorted.length === 1 || !isRowError(error)) throw error;
    await client.query('ROLLBACK');
    await client.query('BEGIN');
    inserted = new Set();
    for (const claim of sorted) {
      const key = keyOf(claim.endpoint, claim.event.eventId);
      await client.query('SAVEPOINT claim');
      try {
        for (const row of await insertRows(client, [claim], jobs)) inserted.add(row);
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
  await insertRawBodies(
    client,
    firsts.flatMap((c) =>
      c.raw
        ? [{ endpoint: c.endpoint, eventId: c.event.eventId, body: c.raw.body, headers: c.raw.headers }]
        : [],
    ),
  );
  await insertApplyJobs(boss, client, firsts, jobs);
  if (hooks.beforeCommit) await hooks.beforeCommit(client, firsts);
  const results = resultsFor(sorted, inserted, failed);
  const redispatched = await redispatchObserved(boss, client, sorted, results);
  await countDeliveries(client, sorted, results);
  const dispatched = firsts.filter((claim) => jobs.get(claim)).map((claim) => claim.endpoint);
  await client.query(commitWithWakeup([...dispatched, ...redispatched]));
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
  return claim.dedupe !== 'observe' && !fromProviderApi(claim);
}

/** Read back from the provider's API (`hookgate replay`, reconciliation): not a delivery. */
function fromProviderApi(claim: Claim): boolean {
  return claim.receivedVia === 'api_replay' || claim.receivedVia === 'api_reconcile';
}

/**
 * Claims a batch: inbox rows and their jobs commit together or not at all, before any answer.
 * Without hooks the whole claim is one statement (one round trip, see CLAIM_IN_ONE_STATEMENT);
 * a batch whose statement failed on a row (or on its guard) goes through the transactional
 * claim. Hooks (sync-mode apply) always take the transactional claim. Results are in the order
 * of `claims`.
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
  const perJob = options.eventsPerJob ?? EVENTS_PER_JOB;
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
      const inserted = await claimInOneStatement(client, sorted, options.wakeup ?? true, perJob).catch(
        (error: unknown) => {
          // A row's data, or the guard: the transactional claim decides, row by row if need be.
          if (isRowError(error)) return null;
          throw error;
        },
      );
      if (inserted) return resultsFor(claims, inserted, new Map());
    }
    const { inserted, failed } = await claimInTransaction(client, boss, sorted, hooks, perJob);
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

async function insertRows(
  client: pg.PoolClient,
  claims: readonly Claim[],
  jobs: DispatchJobs,
): Promise<Set<string>> {
  const result = await client.query<{ endpoint: string; event_id: string }>(
    CLAIM_INBOX_ROWS,
    columns(claims, jobs),
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
    // Events pulled back from a provider's API (replay, reconciliation) are not deliveries.
    if (!result.ok || fromProviderApi(claims[index]!)) return;
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
 * `dedupe: observe`: duplicates of settled events are dispatched again in the claim's
 * transaction (row back to pending, a new job counting on from its attempts). The UPDATE waits
 * for an apply still holding the row, so the duplicate is dispatched once more whatever that
 * apply did.
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
    const reopened = await client.query<{ event_id: string; attempts: number }>(REOPEN_SETTLED_ROWS, [
      endpoint,
      ids,
    ]);
    if (reopened.rows.length === 0) continue;
    redispatched.push(endpoint);
    await dispatchEvents(
      boss,
      client,
      endpoint,
      reopened.rows.map((row) => ({ eventId: row.event_id, attempts: row.attempts })),
      { restart: true },
    );
  }
  return redispatched;
}
