-- What the relay did with each downstream effect, keyed like the effect itself (its kind and
-- idempotency key). It outlives pg-boss's job retention, so replaying an event months later
-- finds `delivered` here and sends nothing.
CREATE TABLE hookgate.outbox_deliveries (
  kind             text        NOT NULL,
  key              text        NOT NULL,
  endpoint         text,
  url              text,
  -- sending: an attempt holds a lease until lease_until; retrying: the last attempt failed
  -- and pg-boss will retry; delivered: a 2xx came back; nowhere: no URL was configured
  -- (recorded as settled); dead: a non-retryable answer or retries exhausted.
  status           text        NOT NULL
                   CHECK (status IN ('sending', 'retrying', 'delivered', 'nowhere', 'dead')),
  attempts         integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  lease_until      timestamptz,
  http_status      integer,
  last_error       text,
  first_attempt_at timestamptz NOT NULL DEFAULT now(),
  last_attempt_at  timestamptz NOT NULL DEFAULT now(),
  settled_at       timestamptz,
  PRIMARY KEY (kind, key)
);

-- Unsettled and dead rows only, for operators and alerts.
CREATE INDEX outbox_deliveries_open_idx ON hookgate.outbox_deliveries (kind, last_attempt_at)
  WHERE status IN ('sending', 'retrying', 'dead');
