/**
 * SQL of the billing reference handler. Every write is guarded by the row it changes:
 * `paid` and `void` are terminal, and the ledger's UNIQUE (invoice_id, kind) books a payment
 * once whichever event (or how many concurrent transactions) carries it.
 */

/**
 * The one rule of `invoice.paid` and `invoice.voided`: an existing invoice moves to paid or void
 * only from a non-terminal status.
 */
const PAID_UNLESS_TERMINAL = `ON CONFLICT (id) DO UPDATE
    SET status = 'paid',
        customer_id = coalesce(i.customer_id, EXCLUDED.customer_id),
        currency = coalesce(EXCLUDED.currency, i.currency),
        amount_due = coalesce(EXCLUDED.amount_due, i.amount_due),
        amount_paid = coalesce(EXCLUDED.amount_paid, i.amount_paid),
        paid_at = EXCLUDED.paid_at,
        updated_by = EXCLUDED.updated_by,
        updated_at = now()
    WHERE i.status NOT IN ('paid', 'void')`;

const VOID_UNLESS_TERMINAL = `ON CONFLICT (id) DO UPDATE
    SET status = 'void',
        voided_at = EXCLUDED.voided_at,
        updated_by = EXCLUDED.updated_by,
        updated_at = now()
    WHERE i.status NOT IN ('paid', 'void')`;

/** Arbitrary fixed class id ('bill') of the per-subscription advisory locks. */
export const SUBSCRIPTION_LOCK_CLASS = 0x62696c6c;

/** Serialises fetch-and-write per subscription until the apply transaction ends. */
export const LOCK_SUBSCRIPTION = 'SELECT pg_advisory_xact_lock($1::int, hashtext($2))';

/** Stores what the API returned (the fetch happened under the lock, after every earlier write). */
export const STORE_SUBSCRIPTION = `
  INSERT INTO billing.subscriptions AS s
    (id, customer_id, status, deleted, data, fetched_at, updated_by)
  VALUES ($1, $2, $3, false, $4::jsonb, $5, $6)
  ON CONFLICT (id) DO UPDATE
    SET customer_id = EXCLUDED.customer_id,
        status = EXCLUDED.status,
        deleted = false,
        data = EXCLUDED.data,
        fetched_at = EXCLUDED.fetched_at,
        updated_by = EXCLUDED.updated_by,
        updated_at = now()`;

/** The API answered 404: the subscription is gone. The last known data is kept. */
export const MARK_SUBSCRIPTION_DELETED = `
  INSERT INTO billing.subscriptions AS s (id, customer_id, status, deleted, fetched_at, updated_by)
  VALUES ($1, $2, NULL, true, $3, $4)
  ON CONFLICT (id) DO UPDATE
    SET deleted = true,
        fetched_at = EXCLUDED.fetched_at,
        updated_by = EXCLUDED.updated_by,
        updated_at = now()`;

// The invoice statements take a round of events (`unnest` arrays). A batch is split into rounds
// holding at most one event per invoice (see billing.ts), so no statement touches an invoice
// twice and each invoice sees its events' statements in the events' order. One event alone is a
// round of one.

/** Arbitrary fixed class id ('invc') of the per-invoice advisory locks of batches. */
export const INVOICE_LOCK_CLASS = 0x696e7663;

/**
 * Locks every invoice of a batch before its first write, those that do not exist yet included,
 * in one order that every batch shares (the ids' hashes, sorted). The rounds write invoices kind
 * by kind, so without it two batches sharing invoices could each hold one the other wants next
 * (a row one inserted, a row one updated) and wait for PostgreSQL's deadlock check (1 s) to fail
 * one of them. Row locks taken in the batch's own order could not cover an invoice that a
 * batch is about to create. The engine's event-by-event rerun of a failed batch touches several,
 * so it runs with the batch's locks still held (`lockBatch`, taken before the batch's savepoint).
 */
export const LOCK_INVOICES = `
  SELECT pg_advisory_xact_lock($2::int, k.key)
    FROM (SELECT DISTINCT hashtext(id) AS key FROM unnest($1::text[]) AS id) k
   ORDER BY k.key`;

/** invoice.created: insert only if absent; an invoice already known (from any event) wins. */
export const INSERT_INVOICES_IF_ABSENT = `
  INSERT INTO billing.invoices
    (id, customer_id, status, currency, amount_due, amount_paid, paid_at, voided_at, created_by, updated_by)
  SELECT e.id, e.customer_id, e.status, e.currency, e.amount_due, e.amount_paid, e.paid_at, e.voided_at,
         e.source, e.source
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[],
                $7::timestamptz[], $8::timestamptz[], $9::text[])
         WITH ORDINALITY AS e(id, customer_id, status, currency, amount_due, amount_paid, paid_at, voided_at,
                              source, ord)
   ORDER BY e.ord
  ON CONFLICT (id) DO NOTHING
  RETURNING id`;

/**
 * invoice.paid: create as paid (paid before created) or advance to paid unless already paid or
 * void. ON CONFLICT DO UPDATE locks the row and re-checks the WHERE against the latest committed
 * version, so concurrent payers and voiders serialise here. Returns the ids it inserted or changed.
 */
export const MARK_INVOICES_PAID = `
  INSERT INTO billing.invoices AS i
    (id, customer_id, status, currency, amount_due, amount_paid, paid_at, created_by, updated_by)
  SELECT e.id, e.customer_id, 'paid', e.currency, e.amount_due, e.amount_paid, coalesce(e.paid_at, now()),
         e.source, e.source
    FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::timestamptz[], $7::text[])
         WITH ORDINALITY AS e(id, customer_id, currency, amount_due, amount_paid, paid_at, source, ord)
   ORDER BY e.ord
  ${PAID_UNLESS_TERMINAL}
  RETURNING i.id`;

/** invoice.voided: create as void or void it, unless it is paid (or already void). Returns the ids it inserted or changed. */
export const MARK_INVOICES_VOID = `
  INSERT INTO billing.invoices AS i
    (id, customer_id, status, currency, amount_due, amount_paid, voided_at, created_by, updated_by)
  SELECT e.id, e.customer_id, 'void', e.currency, e.amount_due, e.amount_paid, coalesce(e.voided_at, now()),
         e.source, e.source
    FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::timestamptz[], $7::text[])
         WITH ORDINALITY AS e(id, customer_id, currency, amount_due, amount_paid, voided_at, source, ord)
   ORDER BY e.ord
  ${VOID_UNLESS_TERMINAL}
  RETURNING i.id`;

/**
 * Books the payment of each paid invoice of a round's `invoice.paid` events, once (the ledger's
 * UNIQUE (invoice_id, kind)), with each invoice's status after the round (`void` is worth a log
 * line). One row per event, in order; `id` is null where nothing was booked, else the booking is
 * the signal to queue the notification in the same transaction.
 */
export const BOOK_PAYMENTS = `
  WITH e AS (
    SELECT *
      FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[])
           WITH ORDINALITY AS e(invoice_id, amount, currency, endpoint, event_id, ord)
  ), booked AS (
    INSERT INTO billing.ledger_entries (invoice_id, kind, amount, currency, endpoint, event_id)
    SELECT i.id, 'payment', coalesce(e.amount, i.amount_paid, i.amount_due, 0), coalesce(e.currency, i.currency),
           e.endpoint, e.event_id
      FROM e JOIN billing.invoices i ON i.id = e.invoice_id
     WHERE i.status = 'paid'
     ORDER BY e.ord
    ON CONFLICT (invoice_id, kind) DO NOTHING
    RETURNING id, invoice_id, amount, currency, booked_at
  )
  SELECT e.invoice_id, i.status, b.id, b.amount, b.currency, b.booked_at
    FROM e
    LEFT JOIN billing.invoices i ON i.id = e.invoice_id
    LEFT JOIN booked b ON b.invoice_id = e.invoice_id
   ORDER BY e.ord`;
