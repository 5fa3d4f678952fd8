import { z } from 'zod';
import { durationMs } from '../config/duration.ts';
import { HookgateError } from '../errors.ts';
import {
  BOOK_PAYMENT,
  INSERT_INVOICE_IF_ABSENT,
  INVOICE_STATUS,
  LOCK_SUBSCRIPTION,
  MARK_INVOICE_PAID,
  MARK_INVOICE_VOID,
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
  EventUnusable,
  type Handler,
  type InboxEvent,
} from './types.ts';

const httpUrl = z
  .string()
  .refine((text) => URL.canParse(text) && /^https?:$/.test(new URL(text).protocol), 'must be an http(s) URL');

export const billingOptionsSchema = z.strictObject({
  /** Secret key for re-fetching subscriptions. Without it subscription events fail (and go dead). */
  stripeApiKey: z.string().min(1, 'must not be empty').optional(),
  /** Base URL of the Stripe API; only scheme, host and port are used. */
  stripeApiBase: httpUrl
    .refine((text) => ['', '/'].includes(new URL(text).pathname), 'must not have a path (scheme://host:port)')
    .default('https://api.stripe.com'),
  /** Per-request timeout of a re-fetch (it runs inside the apply transaction). */
  stripeTimeout: durationMs.default(10_000),
  /** Where the relay POSTs invoice-paid notifications; unset → recorded as delivered nowhere. */
  notifyUrl: httpUrl.optional(),
  /** Per-request timeout of a notification delivery. */
  notifyTimeout: durationMs.default(10_000),
});

export type BillingOptions = z.output<typeof billingOptionsSchema>;

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

const subscriptionRefSchema = z.looseObject({ id: z.string().min(1), customer: customerRef });

const eventSchema = <T extends z.ZodType>(object: T) => z.looseObject({ data: z.looseObject({ object }) });

type Invoice = z.output<typeof invoiceSchema>;

const INVOICE_STATUSES = new Set(['draft', 'open', 'paid', 'void', 'uncollectible']);

function customerId(ref: z.output<typeof customerRef>): string | null {
  if (!ref) return null;
  return typeof ref === 'string' ? ref : ref.id;
}

function fromEpoch(seconds: number | null | undefined): Date | null {
  return seconds == null ? null : new Date(seconds * 1000);
}

/** The object under `data.object`, or an error naming what is wrong (the event is dead at once). */
function objectOf<T extends z.ZodType>(schema: T, event: InboxEvent): z.output<T> {
  const parsed = eventSchema(schema).safeParse(event.payload);
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

  async function invoiceCreated({ tx }: ApplyContext, event: InboxEvent): Promise<ApplyOutcome> {
    const invoice = objectOf(invoiceSchema, event);
    const status = invoice.status && INVOICE_STATUSES.has(invoice.status) ? invoice.status : 'draft';
    const inserted = await tx.query(INSERT_INVOICE_IF_ABSENT, [
      invoice.id,
      customerId(invoice.customer),
      status,
      invoice.currency ?? null,
      invoice.amount_due ?? null,
      invoice.amount_paid ?? null,
      status === 'paid' ? (fromEpoch(invoice.status_transitions?.paid_at) ?? new Date()) : null,
      status === 'void' ? (fromEpoch(invoice.status_transitions?.voided_at) ?? new Date()) : null,
      sourceOf(event),
    ]);
    return inserted.rowCount === 1 ? 'processed' : 'ignored';
  }

  async function invoicePaid(context: ApplyContext, event: InboxEvent): Promise<ApplyOutcome> {
    const { tx, outbox, logger } = context;
    const invoice: Invoice = objectOf(invoiceSchema, event);
    const changed = await tx.query(MARK_INVOICE_PAID, [
      invoice.id,
      customerId(invoice.customer),
      invoice.currency ?? null,
      invoice.amount_due ?? null,
      invoice.amount_paid ?? null,
      fromEpoch(invoice.status_transitions?.paid_at),
      sourceOf(event),
    ]);
    if (changed.rowCount === 0) {
      const current = await tx.query<{ status: string }>(INVOICE_STATUS, [invoice.id]);
      if (current.rows[0]?.status === 'void') {
        logger.info(
          { invoice: invoice.id, eventId: event.eventId },
          'invoice.paid on a void invoice: ignored',
        );
        return 'ignored';
      }
      // Already paid: book the payment if nothing has yet (self-healing), else it is a repeat.
    }
    const booked = await tx.query<{ id: string; amount: string; currency: string | null; booked_at: Date }>(
      BOOK_PAYMENT,
      [invoice.id, invoice.amount_paid ?? null, invoice.currency ?? null, event.endpoint, event.eventId],
    );
    const entry = booked.rows[0];
    if (!entry) return changed.rowCount === 0 ? 'ignored' : 'processed';
    const key = `${invoice.id}:paid`;
    await outbox.enqueue({
      kind: 'notify',
      key,
      payload: {
        url: settings.notifyUrl ?? null,
        idempotencyKey: key,
        endpoint: event.endpoint,
        eventId: event.eventId,
        timeoutMs: settings.notifyTimeout,
        body: {
          type: 'invoice.paid',
          invoice: invoice.id,
          customer: customerId(invoice.customer),
          amount: Number(entry.amount),
          currency: entry.currency,
          ledgerEntry: Number(entry.id),
          bookedAt: entry.booked_at.toISOString(),
          source: { endpoint: event.endpoint, eventId: event.eventId },
        },
      },
    });
    return 'processed';
  }

  async function invoiceVoided({ tx }: ApplyContext, event: InboxEvent): Promise<ApplyOutcome> {
    const invoice = objectOf(invoiceSchema, event);
    const changed = await tx.query(MARK_INVOICE_VOID, [
      invoice.id,
      customerId(invoice.customer),
      invoice.currency ?? null,
      invoice.amount_due ?? null,
      invoice.amount_paid ?? null,
      fromEpoch(invoice.status_transitions?.voided_at),
      sourceOf(event),
    ]);
    // No change: already void, or paid (a paid invoice is never voided).
    return changed.rowCount === 1 ? 'processed' : 'ignored';
  }

  async function subscriptionChanged({ tx }: ApplyContext, event: InboxEvent): Promise<ApplyOutcome> {
    const ref = objectOf(subscriptionRefSchema, event);
    if (!subscriptions) {
      throw new HookgateError(
        'handler_options_invalid',
        `${deps.endpoint}.options.stripeApiKey is not set, so subscription ${ref.id} cannot be re-fetched; set it and requeue the event.`,
      );
    }
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

  return {
    name: 'billing',
    async apply(context, event) {
      switch (event.eventType) {
        case 'invoice.created':
          return invoiceCreated(context, event);
        case 'invoice.paid':
          return invoicePaid(context, event);
        case 'invoice.voided':
          return invoiceVoided(context, event);
        default:
          if (event.eventType.startsWith('customer.subscription.'))
            return subscriptionChanged(context, event);
          return 'ignored';
      }
    },
  };
}
