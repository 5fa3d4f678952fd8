/**
 * SQL of the billing reference handler. Every write is guarded by the row it changes:
 * `paid` and `void` are terminal, and the ledger's UNIQUE (invoice_id, kind) books a payment
 * once whichever event (or how many concurrent transactions) carries it.
 */

/** invoice.created: insert only if absent; an invoice already known (from any event) wins. */
export const INSERT_INVOICE_IF_ABSENT = `
  INSERT INTO billing.invoices
    (id, customer_id, status, currency, amount_due, amount_paid, paid_at, voided_at, created_by, updated_by)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)
  ON CONFLICT (id) DO NOTHING
  RETURNING id`;

/**
 * invoice.paid: create as paid (paid before created) or advance to paid unless already paid
 * or void. ON CONFLICT DO UPDATE locks the row and re-checks the WHERE against the latest
 * committed version, so concurrent payers and voiders serialise here.
 */
export const MARK_INVOICE_PAID = `
  INSERT INTO billing.invoices AS i
    (id, customer_id, status, currency, amount_due, amount_paid, paid_at, created_by, updated_by)
  VALUES ($1, $2, 'paid', $3, $4, $5, coalesce($6, now()), $7, $7)
  ON CONFLICT (id) DO UPDATE
    SET status = 'paid',
        customer_id = coalesce(i.customer_id, EXCLUDED.customer_id),
        currency = coalesce(EXCLUDED.currency, i.currency),
        amount_due = coalesce(EXCLUDED.amount_due, i.amount_due),
        amount_paid = coalesce(EXCLUDED.amount_paid, i.amount_paid),
        paid_at = EXCLUDED.paid_at,
        updated_by = EXCLUDED.updated_by,
        updated_at = now()
    WHERE i.status NOT IN ('paid', 'void')
  RETURNING i.status`;

/** invoice.voided: create as void or void it, unless it is paid (or already void). */
export const MARK_INVOICE_VOID = `
  INSERT INTO billing.invoices AS i
    (id, customer_id, status, currency, amount_due, amount_paid, voided_at, created_by, updated_by)
  VALUES ($1, $2, 'void', $3, $4, $5, coalesce($6, now()), $7, $7)
  ON CONFLICT (id) DO UPDATE
    SET status = 'void',
        voided_at = EXCLUDED.voided_at,
        updated_by = EXCLUDED.updated_by,
        updated_at = now()
    WHERE i.status NOT IN ('paid', 'void')
  RETURNING i.status`;

/** `paid` and `void` never change, so reading them without a lock is stable. */
export const INVOICE_STATUS = 'SELECT status FROM billing.invoices WHERE id = $1';

/**
 * Books the payment of a paid invoice, once. Returns the row only when this call inserted it:
 * that is the signal to queue the notification in the same transaction.
 */
export const BOOK_PAYMENT = `
  INSERT INTO billing.ledger_entries (invoice_id, kind, amount, currency, endpoint, event_id)
  SELECT i.id, 'payment', coalesce($2, i.amount_paid, i.amount_due, 0), coalesce($3, i.currency), $4, $5
    FROM billing.invoices i
   WHERE i.id = $1 AND i.status = 'paid'
  ON CONFLICT (invoice_id, kind) DO NOTHING
  RETURNING id, amount, currency, booked_at`;

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
