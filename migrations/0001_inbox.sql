-- The inbox: one row per (endpoint, event_id), written by the gateway's claim and settled by
-- the worker. The primary key is the deduplication key; nothing else may be unique here.
CREATE SCHEMA IF NOT EXISTS hookgate;

CREATE TABLE hookgate.inbox (
  endpoint        text        NOT NULL,
  event_id        text        NOT NULL,
  provider        text        NOT NULL,
  event_type      text        NOT NULL,
  entity_type     text,
  entity_id       text,
  -- Normalised by the gateway: integers as given, RFC 3339 timestamps as epoch microseconds.
  entity_version  bigint,
  payload         jsonb       NOT NULL,
  headers         jsonb       NOT NULL DEFAULT '{}'::jsonb,
  status          text        NOT NULL DEFAULT 'pending'
                  CHECK (status IN ('pending', 'processed', 'ignored', 'stale', 'parked', 'dead')),
  attempts        integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  last_error      text,
  received_at     timestamptz NOT NULL DEFAULT now(),
  processed_at    timestamptz,
  traceparent     text,
  PRIMARY KEY (endpoint, event_id),
  CHECK (length(event_id) BETWEEN 1 AND 512)
);

-- Unsettled rows only: backlog and oldest-age queries stay the size of the backlog, not of
-- the history.
CREATE INDEX inbox_pending_idx ON hookgate.inbox (endpoint, received_at) WHERE status = 'pending';
CREATE INDEX inbox_stuck_idx ON hookgate.inbox (endpoint, status, received_at)
  WHERE status IN ('parked', 'dead');
-- Settled rows by age, for retention.
CREATE INDEX inbox_received_at_idx ON hookgate.inbox (received_at);
