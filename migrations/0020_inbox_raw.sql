-- `body: raw` destinations (docs/destinations.md): the provider's original request bytes and the
-- headers those destinations pass through (a signature the receiver re-verifies), kept beside
-- the inbox row, written by the claim in its transaction, only for endpoints that have a
-- `body: raw` destination: other endpoints write nothing here. A table of its own, not a column of
-- the inbox: the inbox row is updated as it is dispatched and settled, and each update would copy
-- the bytes into a new row version; these rows are written once and deleted once. Deleted by
-- `hookgate prune` once their inbox row is gone (services/core/inbox/raw-bodies.ts).
CREATE TABLE hookgate.inbox_raw (
  endpoint    text        NOT NULL,
  event_id    text        NOT NULL,
  body        bytea       NOT NULL,
  -- The configured pass-through headers as received (lower-case names), only those present.
  headers     jsonb       NOT NULL DEFAULT '{}'::jsonb,
  received_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (endpoint, event_id)
);

-- Retention: walked oldest first from a cursor, as the inbox's prune walks inbox_received_at_idx.
CREATE INDEX inbox_raw_received_at_idx ON hookgate.inbox_raw (received_at);
