-- The billing reference domain (handler `billing`): Stripe-shaped invoices and subscriptions
-- and a ledger whose business key makes a payment bookable once, whatever event carries it.
CREATE SCHEMA IF NOT EXISTS billing;

CREATE TABLE billing.invoices (
  id               text        PRIMARY KEY,
  customer_id      text,
  -- Stripe's invoice statuses. `paid` and `void` are terminal: nothing moves an invoice out
  -- of them.
  status           text        NOT NULL
                   CHECK (status IN ('draft', 'open', 'paid', 'void', 'uncollectible')),
  currency         text,
  amount_due       bigint,
  amount_paid      bigint,
  paid_at          timestamptz,
  voided_at        timestamptz,
  -- The event that inserted the row and the one that last changed it: (endpoint, event_id).
  created_by       text        NOT NULL,
  updated_by       text        NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE billing.ledger_entries (
  id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  invoice_id       text        NOT NULL REFERENCES billing.invoices (id),
  kind             text        NOT NULL CHECK (kind IN ('payment')),
  amount           bigint      NOT NULL,
  currency         text,
  endpoint         text        NOT NULL,
  event_id         text        NOT NULL,
  booked_at        timestamptz NOT NULL DEFAULT now(),
  -- The business key: one payment per invoice, however many events report it.
  UNIQUE (invoice_id, kind)
);

-- Subscriptions hold the state the Stripe API returned when the row was last written; the
-- write happens under a per-subscription advisory lock after the fetch, so a later write
-- always carries a later (or equal) fetch.
CREATE TABLE billing.subscriptions (
  id               text        PRIMARY KEY,
  customer_id      text,
  status           text,
  -- True once the API answered 404 for it (or returned it with `deleted: true`).
  deleted          boolean     NOT NULL DEFAULT false,
  data             jsonb,
  fetched_at       timestamptz NOT NULL,
  updated_by       text        NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now()
);
