import type pg from 'pg';
import { isSettled } from '../../core/inbox/status.ts';
import {
  ACKED_EVENTS,
  ENDPOINTS_WITH_LEDGER,
  ENDPOINTS_WITH_STATE,
  ENTITY_VERSIONS,
  OLDEST_PENDING_NOT_SENT,
  PAYMENTS_BOOKED,
  PENDING_COUNTS,
} from '../../core/read-models/verify-sql.ts';
import type { SentFile } from './sent-file.ts';

const CHUNK = 5_000;
/** Violations kept in full; the rest are counted. */
const KEPT = 100;

export type ViolationKind =
  | 'missing'
  | 'pending'
  | 'parked'
  | 'dead'
  // An operator dismissed it (`hookgate discard`): kept, never applied, so not settled by the run.
  | 'discarded'
  | 'pending_not_sent'
  | 'payment_not_booked'
  | 'entity_behind'
  | 'entity_missing';

export interface Violation {
  readonly kind: ViolationKind;
  readonly endpoint: string;
  readonly event_id?: string;
  readonly detail: string;
}

export interface EndpointSummary {
  readonly endpoint: string;
  deliveries: number;
  events: number;
  /** Acknowledged events by inbox status; `missing` when there is no row. */
  readonly statuses: Record<string, number>;
  /** Pending rows of this endpoint that the file does not name. */
  pendingNotSent: number;
}

export interface VerifyReport {
  readonly ok: boolean;
  readonly deliveries: number;
  readonly events: number;
  readonly otherLines: number;
  readonly endpoints: readonly EndpointSummary[];
  readonly payments: {
    readonly endpoints: readonly string[];
    readonly unique: number;
    readonly booked: number;
    /** Paid after being voided: ignored by design, so not booked. */
    readonly paidAfterVoid: number;
  };
  readonly versions: {
    readonly endpoints: readonly string[];
    readonly entities: number;
    readonly behind: number;
    readonly missing: number;
  };
  readonly violationCount: number;
  readonly violations: readonly Violation[];
}

/** Which endpoints run which handler; without a configuration it is inferred from the data. */
export interface EndpointRoles {
  readonly billing: ReadonlySet<string> | null;
  /** Endpoint → entity type used when an event carries none (the project handler's option). */
  readonly project: ReadonlyMap<string, string> | null;
}

function chunks<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += CHUNK) out.push(items.slice(i, i + CHUNK));
  return out;
}

/** Checks a drained run against the database: read-only, a handful of batched statements. */
export async function verifyRun(pool: pg.Pool, sent: SentFile, roles: EndpointRoles): Promise<VerifyReport> {
  const violations: Violation[] = [];
  let violationCount = 0;
  const violate = (violation: Violation) => {
    violationCount += 1;
    if (violations.length < KEPT) violations.push(violation);
  };

  const summaries = new Map<string, EndpointSummary>();
  for (const event of sent.events.values()) {
    let summary = summaries.get(event.endpoint);
    if (!summary) {
      summary = { endpoint: event.endpoint, deliveries: 0, events: 0, statuses: {}, pendingNotSent: 0 };
      summaries.set(event.endpoint, summary);
    }
    summary.deliveries += event.deliveries;
    summary.events += 1;
  }
  const endpoints = [...summaries.keys()].sort();

  const billing =
    roles.billing ??
    new Set(
      (await pool.query<{ endpoint: string }>(ENDPOINTS_WITH_LEDGER, [endpoints])).rows.map(
        (r) => r.endpoint,
      ),
    );
  const project =
    roles.project ??
    new Map(
      (await pool.query<{ endpoint: string }>(ENDPOINTS_WITH_STATE, [endpoints])).rows.map((r) => [
        r.endpoint,
        'entity',
      ]),
    );

  // 1. Every acknowledged event is in the inbox (once: the primary key) and settled.
  const newest = new Map<
    string,
    { endpoint: string; type: string; id: string; version: bigint; eventId: string }
  >();
  const invoices = new Map<string, { endpoint: string; eventId: string }>();
  const pendingAcked: { endpoint: string; eventId: string }[] = [];
  for (const slice of chunks([...sent.events.values()])) {
    const rows = await pool.query<{
      endpoint: string;
      event_id: string;
      status: string | null;
      entity_type: string | null;
      entity_id: string | null;
      entity_version: string | null;
      invoice: string | null;
    }>(ACKED_EVENTS, [slice.map((e) => e.endpoint), slice.map((e) => e.eventId)]);
    for (const row of rows.rows) {
      const summary = summaries.get(row.endpoint)!;
      const status = row.status ?? 'missing';
      summary.statuses[status] = (summary.statuses[status] ?? 0) + 1;
      if (row.status === null) {
        violate({
          kind: 'missing',
          endpoint: row.endpoint,
          event_id: row.event_id,
          detail: 'acknowledged but not in the inbox',
        });
        continue;
      }
      if (row.status === 'pending') pendingAcked.push({ endpoint: row.endpoint, eventId: row.event_id });
      if (!isSettled(row.status)) {
        violate({
          kind: row.status as ViolationKind,
          endpoint: row.endpoint,
          event_id: row.event_id,
          detail: `status ${row.status}`,
        });
      }
      const defaultType = project.get(row.endpoint);
      if (defaultType !== undefined && row.entity_id !== null && row.entity_version !== null) {
        const type = row.entity_type ?? defaultType;
        const key = `${row.endpoint}\u0000${type}\u0000${row.entity_id}`;
        const version = BigInt(row.entity_version);
        const known = newest.get(key);
        if (!known || known.version < version) {
          newest.set(key, {
            endpoint: row.endpoint,
            type,
            id: row.entity_id,
            version,
            eventId: row.event_id,
          });
        }
      }
      if (billing.has(row.endpoint) && row.invoice) {
        if (!invoices.has(row.invoice))
          invoices.set(row.invoice, { endpoint: row.endpoint, eventId: row.event_id });
      }
    }
  }

  // 2. Nothing pending on the run's endpoints, including events the file does not name.
  const pending = await pool.query<{ endpoint: string; events: string }>(PENDING_COUNTS, [endpoints]);
  let pendingTotal = 0;
  for (const row of pending.rows) pendingTotal += Number(row.events);
  const notSent = pendingTotal - pendingAcked.length;
  if (notSent > 0) {
    const ackedBy = new Map<string, number>();
    for (const p of pendingAcked) ackedBy.set(p.endpoint, (ackedBy.get(p.endpoint) ?? 0) + 1);
    for (const row of pending.rows) {
      summaries.get(row.endpoint)!.pendingNotSent = Number(row.events) - (ackedBy.get(row.endpoint) ?? 0);
    }
    const examples = await pool.query<{ endpoint: string; event_id: string }>(OLDEST_PENDING_NOT_SENT, [
      endpoints,
      pendingAcked.map((p) => p.endpoint),
      pendingAcked.map((p) => p.eventId),
      20,
    ]);
    for (const row of examples.rows) {
      violate({
        kind: 'pending_not_sent',
        endpoint: row.endpoint,
        event_id: row.event_id,
        detail: 'pending (not in the sent file)',
      });
    }
    // Counted, not listed, beyond the examples.
    violationCount += notSent - examples.rows.length;
  }

  // 3. No entity behind the newest version sent for it.
  let behind = 0;
  let missingEntities = 0;
  for (const slice of chunks([...newest.values()])) {
    const rows = await pool.query<{
      endpoint: string;
      entity_type: string;
      entity_id: string;
      version: string | null;
    }>(ENTITY_VERSIONS, [slice.map((e) => e.endpoint), slice.map((e) => e.type), slice.map((e) => e.id)]);
    for (const row of rows.rows) {
      const expected = newest.get(`${row.endpoint}\u0000${row.entity_type}\u0000${row.entity_id}`)!;
      if (row.version === null) {
        missingEntities += 1;
        violate({
          kind: 'entity_missing',
          endpoint: row.endpoint,
          event_id: expected.eventId,
          detail: `${row.entity_type} ${row.entity_id} has no projected state (newest version sent ${expected.version})`,
        });
      } else if (BigInt(row.version) < expected.version) {
        behind += 1;
        violate({
          kind: 'entity_behind',
          endpoint: row.endpoint,
          event_id: expected.eventId,
          detail: `${row.entity_type} ${row.entity_id} is at version ${row.version}, older than ${expected.version} sent`,
        });
      }
    }
  }

  // 4. One ledger entry per unique payment sent.
  let booked = 0;
  let paidAfterVoid = 0;
  for (const slice of chunks([...invoices.keys()])) {
    const rows = await pool.query<{ invoice_id: string; booked: boolean; invoice_status: string | null }>(
      PAYMENTS_BOOKED,
      [slice],
    );
    for (const row of rows.rows) {
      if (row.booked) booked += 1;
      else if (row.invoice_status === 'void') paidAfterVoid += 1;
      else {
        const source = invoices.get(row.invoice_id)!;
        violate({
          kind: 'payment_not_booked',
          endpoint: source.endpoint,
          event_id: source.eventId,
          detail: `invoice ${row.invoice_id} was paid but has no ledger entry`,
        });
      }
    }
  }

  return {
    ok: violationCount === 0,
    deliveries: sent.deliveries,
    events: sent.events.size,
    otherLines: sent.otherLines,
    endpoints: endpoints.map((endpoint) => summaries.get(endpoint)!),
    // Only the run's endpoints: a configuration's other billing or projecting endpoints were not
    // checked, and naming them would say they were.
    payments: {
      endpoints: endpoints.filter((endpoint) => billing.has(endpoint)),
      unique: invoices.size,
      booked,
      paidAfterVoid,
    },
    versions: {
      endpoints: endpoints.filter((endpoint) => project.has(endpoint)),
      entities: newest.size,
      behind,
      missing: missingEntities,
    },
    violationCount,
    violations,
  };
}
