import { z } from 'zod';
import { billingOptionsSchema } from '../config/handlers-schema.ts';
import {
  BOOK_PAYMENTS,
  INSERT_INVOICES_IF_ABSENT,
  INVOICE_LOCK_CLASS,
  LOCK_INVOICES,
  LOCK_SUBSCRIPTION,
  MARK_INVOICES_PAID,
  MARK_INVOICES_VOID,
  MARK_SUBSCRIPTION_DELETED,
  STORE_SUBSCRIPTION,
  SUBSCRIPTION_LOCK_CLASS,
} from './billing-sql.ts';
import { parseHandlerOptions } from './handler-options.ts';
import type { HandlerDeps } from './index.ts';
import { createSubscriptionSource, type SubscriptionSource } from './stripe-refetch.ts';
import {
  type ApplyContext,
  type ApplyOutcome,
  type BatchContext,
  type BatchEventResult,
  EventUnusable,
  type Handler,
  type InboxEvent,
  roundsByKey,
} from './types.ts';

const customerRef = z.union([z.string(), z.looseObject({ id: z.string() })]).nullish();
const epochSeconds = z.number().int().nullish();

const invoiceSchema = z.looseObject({
  id: z.string().min(1),
  customer: customerRef,
  status: z.string().nullish(),
  currency: z.string().nullish(),
  amount_due: z.number().int().nullish(),
  amount_paid: z.number().int().nullish(),
  status_transitions: z.looseObject({ paid_at: epochSeconds, voided_at: epochSeconds }).nullish(),
});

// `object` is checked: the re-fetch reads /v1/subscriptions/<id>, and an event of this family
// carrying another object (a malformed or mislabelled event) must not store a fetch under its id.
const subscriptionRefSchema = z.looseObject({
  id: z.string().min(1),
  object: z.literal('subscription', { error: "must be 'subscription'" }),
  customer: customerRef,
});

const eventSchema = <T extends z.ZodType>(object: T) => z.looseObject({ data: z.looseObject({ object }) });

type Invoice = z.output<typeof invoiceSchema>;

const INVOICE_STATUSES = new Set(['draft', 'open', 'paid', 'void', 'uncollectible']);

/** The invoice events the batch form takes, by event type. */
const INVOICE_KINDS = new Map<string, InvoiceOp['kind']>([
  ['invoice.created', 'created'],
  ['invoice.paid', 'paid'],
  ['invoice.voided', 'voided'],
]);

interface InvoiceOp {
  /** The event's position in the batch. */
  readonly index: number;
  readonly event: InboxEvent;
  readonly kind: 'created' | 'paid' | 'voided';
  readonly invoice: Invoice;
}

/** Rows of parameters → one array per parameter (for `unnest`). */
function columns(rows: readonly (readonly unknown[])[], width: number): unknown[][] {
  return Array.from({ length: width }, (_, column) => rows.map((row) => row[column]));
}

/** Runs a round's statement and returns the invoice ids it wrote (its `RETURNING id`). */
async function idsOf(tx: ApplyContext['tx'], sql: string, params: unknown[]): Promise<Set<string>> {
  const result = await tx.query<{ id: string }>(sql, params);
  return new Set(result.rows.map((row) => row.id));
}

function customerId(ref: z.output<typeof customerRef>): string | null {
  if (!ref) return null;
  return typeof ref === 'string' ? ref : ref.id;
}

function fromEpoch(seconds: number | null | undefined): Date | null {
  return seconds == null ? null : new Date(seconds * 1000);
}

// Built once: zod compiles a schema on its first use, and building one per event cost the
// worker a tenth of its CPU while draining billing events.
const eventSchemas = new Map<z.ZodType, z.ZodType>();

/** `data.object.id` of an event's payload, if it is a string. */
function invoiceIdOf(event: InboxEvent): string | null {
  const data = (event.payload as { data?: { object?: { id?: unknown } } } | null)?.data;
  const id = data?.object?.id;
  return typeof id === 'string' ? id : null;
}

/** The object under `data.object`, or an error naming what is wrong (the event is dead at once). */
function objectOf<T extends z.ZodType>(schema: T, event: InboxEvent): z.output<T> {
  let wrapped = eventSchemas.get(schema);
  if (wrapped === undefined) {
    wrapped = eventSchema(schema);
    eventSchemas.set(schema, wrapped);
  }
  const parsed = wrapped.safeParse(event.payload);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new EventUnusable(
      'billing_payload_invalid',
      `${event.eventType} event ${event.eventId} has no usable /${issue.path.join('/')}: ${issue.message}`,
    );
  }
  return (parsed.data as { data: { object: z.output<T> } }).data.object;
}

const sourceOf = (event: InboxEvent): string => `${event.endpoint}:${event.eventId}`;

/** invoice.created's status: Stripe's, or `draft` for anything unknown. */
function createdStatus(invoice: Invoice): string {
  return invoice.status && INVOICE_STATUSES.has(invoice.status) ? invoice.status : 'draft';
}

/** invoice.created's parameters (INSERT_INVOICES_IF_ABSENT's columns). */
function createdValues(invoice: Invoice, event: InboxEvent) {
  const status = createdStatus(invoice);
  return [
    invoice.id,
    customerId(invoice.customer),
    status,
    invoice.currency ?? null,
    invoice.amount_due ?? null,
    invoice.amount_paid ?? null,
    status === 'paid' ? (fromEpoch(invoice.status_transitions?.paid_at) ?? new Date()) : null,
    status === 'void' ? (fromEpoch(invoice.status_transitions?.voided_at) ?? new Date()) : null,
    sourceOf(event),
  ] as const;
}

/** invoice.paid's or invoice.voided's parameters (MARK_INVOICE_PAID's and MARK_INVOICE_VOID's order). */
function markValues(invoice: Invoice, event: InboxEvent, at: number | null | undefined) {
  return [
    invoice.id,
    customerId(invoice.customer),
    invoice.currency ?? null,
    invoice.amount_due ?? null,
    invoice.amount_paid ?? null,
    fromEpoch(at),
    sourceOf(event),
  ] as const;
}

/**
 * The reference domain (Stripe-shaped payloads). Invoices are guarded by business keys and
 * terminal states; subscriptions are re-fetched from the API under a per-entity lock, because
 * Stripe's `created` (whole seconds) cannot order events.
 */
export function createBillingHandler(options: unknown, deps: HandlerDeps): Handler {
  const settings = parseHandlerOptions(billingOptionsSchema, options, deps.endpoint);
  const subscriptions: SubscriptionSource | null = settings.stripeApiKey
    ? createSubscriptionSource({
        apiKey: settings.stripeApiKey,
        apiBase: settings.stripeApiBase,
        timeoutMs: settings.stripeTimeout,
      })
    : null;
  if (!subscriptions) {
    // Once per process at start: an endpoint that never gets subscription events is fine.
    deps.logger.warn(
      { option: 'stripeApiKey', code: 'option_missing' },
      'billing: options.stripeApiKey is not set; customer.subscription.* events will end dead at once with option_missing (set it and requeue them); invoice events are not affected',
    );
  }

  /**
   * Without the API key a subscription event can never apply, however often it is retried: it
   * ends `dead` at its first attempt with `option_missing`, to be requeued once the key is set.
   */
  const missingKey = (event: InboxEvent): EventUnusable =>
    new EventUnusable(
      'option_missing',
      `${deps.endpoint}.options.stripeApiKey is not set, so ${event.eventType} cannot re-fetch its subscription; set it, restart, and requeue (hookgate requeue --endpoint ${deps.endpoint} --status dead --type ${event.eventType}).`,
    );

  async function subscriptionChanged({ tx }: ApplyContext, event: InboxEvent): Promise<ApplyOutcome> {
    if (!subscriptions) throw missingKey(event);
    const ref = objectOf(subscriptionRefSchema, event);
    // Lock first, fetch second: whoever writes later also fetched later.
    await tx.query(LOCK_SUBSCRIPTION, [SUBSCRIPTION_LOCK_CLASS, ref.id]);
    const fetchedAt = new Date();
    const current = await subscriptions.retrieve(ref.id);
    if (current === null) {
      await tx.query(MARK_SUBSCRIPTION_DELETED, [
        ref.id,
        customerId(ref.customer),
        fetchedAt,
        sourceOf(event),
      ]);
      return 'processed';
    }
    // What the API returned is stored whole, so it must be the subscription asked for.
    if (current.object !== 'subscription' || current.id !== ref.id) {
      throw new EventUnusable(
        'billing_payload_invalid',
        `The re-fetch of subscription ${ref.id} for ${event.eventType} event ${event.eventId} returned ${typeof current.object === 'string' ? `a ${current.object}` : 'no object type'} with id ${String(current.id)}, not that subscription.`,
      );
    }
    const customer = customerRef.safeParse(current.customer);
    await tx.query(STORE_SUBSCRIPTION, [
      ref.id,
      customer.success ? customerId(customer.data) : customerId(ref.customer),
      typeof current.status === 'string' ? current.status : null,
      JSON.stringify(current),
      fetchedAt,
      sourceOf(event),
    ]);
    return 'processed';
  }

  /** LOCK_INVOICES: one advisory lock per invoice, in hash order (held ones are taken again at no cost). */
  async function lockInvoices(tx: ApplyContext['tx'], ids: readonly string[]): Promise<void> {
    if (ids.length > 0) await tx.query(LOCK_INVOICES, [[...new Set(ids)], INVOICE_LOCK_CLASS]);
  }

  /**
   * The set-based form. Invoice events are split into rounds, the n-th holding each invoice's
   * n-th event in the batch's order; each round runs the per-event statements over arrays
   * (created, paid, voided, then the paid ones' ledger entries). Invoices never affect each
   * other, so running each invoice's events in order, round by round, leaves what running the
   * whole batch event by event leaves. Subscription events keep their per-event path (a fetch
   * under a lock).
   */
  async function applyInvoiceBatch(
    context: BatchContext,
    events: readonly InboxEvent[],
  ): Promise<BatchEventResult[]> {
    const { tx } = context;
    const results: BatchEventResult[] = new Array(events.length);
    const ops: InvoiceOp[] = [];
    for (const [index, event] of events.entries()) {
      const kind = INVOICE_KINDS.get(event.eventType);
      if (kind) {
        try {
          ops.push({ index, event, kind, invoice: objectOf(invoiceSchema, event) });
        } catch (error) {
          // Nothing was written for it: it fails alone, like a throw in its own savepoint.
          results[index] = { error };
        }
      } else if (event.eventType.startsWith('customer.subscription.') && !subscriptions) {
        // Nothing is written for it: it fails alone, without undoing the batch.
        results[index] = { error: missingKey(event) };
      } else if (event.eventType.startsWith('customer.subscription.')) {
        results[index] = await subscriptionChanged(context, event);
      } else {
        results[index] = 'ignored';
      }
    }
    if (ops.length === 0) return results;
    // The batch's invoices are locked already (lockBatch, called first by the worker).
    for (const round of roundsByKey(ops, (op) => op.invoice.id)) {
      const created = round.filter((op) => op.kind === 'created');
      const paid = round.filter((op) => op.kind === 'paid');
      const voided = round.filter((op) => op.kind === 'voided');
      if (created.length > 0) {
        const rows = created.map((op) => createdValues(op.invoice, op.event));
        const inserted = await idsOf(tx, INSERT_INVOICES_IF_ABSENT, columns(rows, 9));
        for (const op of created) results[op.index] = inserted.has(op.invoice.id) ? 'processed' : 'ignored';
      }
      const changedPaid =
        paid.length === 0
          ? new Set<string>()
          : await idsOf(
              tx,
              MARK_INVOICES_PAID,
              columns(
                paid.map((op) => markValues(op.invoice, op.event, op.invoice.status_transitions?.paid_at)),
                7,
              ),
            );
      if (voided.length > 0) {
        const rows = voided.map((op) =>
          markValues(op.invoice, op.event, op.invoice.status_transitions?.voided_at),
        );
        const changed = await idsOf(tx, MARK_INVOICES_VOID, columns(rows, 7));
        for (const op of voided) results[op.index] = changed.has(op.invoice.id) ? 'processed' : 'ignored';
      }
      if (paid.length === 0) continue;
      const booked = await tx.query<{ status: string | null; id: string | null }>(BOOK_PAYMENTS, [
        paid.map((op) => op.invoice.id),
        paid.map((op) => op.invoice.amount_paid ?? null),
        paid.map((op) => op.invoice.currency ?? null),
        paid.map((op) => op.event.endpoint),
        paid.map((op) => op.event.eventId),
      ]);
      for (const [n, op] of paid.entries()) {
        const row = booked.rows[n]!;
        const changed = changedPaid.has(op.invoice.id);
        if (!changed && row.status === 'void') {
          context.logger.info(
            { invoice: op.invoice.id, event_id: op.event.eventId },
            'invoice.paid on a void invoice: ignored',
          );
          results[op.index] = 'ignored';
        } else if (row.id !== null) {
          // A new ledger entry: only this event, never a copy of the same fact under another id
          // (the entry is unique per invoice, so that copy books nothing), is routed.
          if (settings.notify !== undefined) context.route(op.event, settings.notify);
          results[op.index] = 'processed';
        } else {
          results[op.index] = changed ? 'processed' : 'ignored';
        }
      }
    }
    return results;
  }

  return {
    name: 'billing',
    applyBatch: applyInvoiceBatch,
    async lockBatch(tx, events) {
      const ids: string[] = [];
      for (const event of events) {
        if (!INVOICE_KINDS.has(event.eventType)) continue;
        // Only the id, without the schema that applyBatch checks right after: a payload it
        // refuses writes nothing, and an extra lock costs nothing.
        const id = invoiceIdOf(event);
        if (id !== null) ids.push(id);
      }
      await lockInvoices(tx, ids);
    },
  };
}
