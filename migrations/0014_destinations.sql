-- Destinations (docs/destinations.md): one row per (event, destination), written by the apply
-- engine in the apply's own transaction, so a delivery exists only if its event's apply
-- committed. The row is the relay's truth: its status, attempts and next attempt's time live
-- here, and the relay claims due rows itself (no pg-boss job per delivery).
CREATE TABLE hookgate.destination_deliveries (
  id                   bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  endpoint             text        NOT NULL,
  destination          text        NOT NULL,
  event_id             text        NOT NULL,
  event_type           text        NOT NULL,
  -- Sent as webhook-id and Idempotency-Key on every attempt and every redelivery: receivers
  -- dedupe on it. Derived from (endpoint, event_id, destination).
  webhook_id           text        NOT NULL,
  -- pending: due at next_attempt_at; sending: an attempt holds a lease until lease_until;
  -- retrying: the last attempt failed, the next is due at next_attempt_at; held: the
  -- destination is paused; delivered: a 2xx came back; dead: a non-retryable answer or its
  -- retries ran out (until `hookgate redeliver`).
  status               text        NOT NULL DEFAULT 'pending'
                       CHECK (status IN ('pending', 'sending', 'retrying', 'held', 'delivered', 'dead')),
  attempts             integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  -- The attempts made before the latest redelivery: the retry budget counts from here.
  redelivered_attempts integer     NOT NULL DEFAULT 0 CHECK (redelivered_attempts >= 0),
  next_attempt_at      timestamptz NOT NULL DEFAULT now(),
  lease_until          timestamptz,
  http_status          integer,
  last_error           text,
  created_at           timestamptz NOT NULL DEFAULT now(),
  last_attempt_at      timestamptz,
  settled_at           timestamptz,
  -- The event's entity (`[type, id]` as JSON; null without one) and version, for
  -- destinations with `ordering: entity`: one in flight per entity, in version order.
  entity_key           text,
  entity_version       bigint,
  UNIQUE (endpoint, event_id, destination)
);

-- What the relay claims: due rows of one destination, and leases that ran out (a killed worker).
CREATE INDEX destination_deliveries_due_idx ON hookgate.destination_deliveries
  (endpoint, destination, next_attempt_at) WHERE status IN ('pending', 'retrying', 'sending');
-- Held and dead rows, for operators, the gauges and the alert.
CREATE INDEX destination_deliveries_stuck_idx ON hookgate.destination_deliveries
  (endpoint, destination, status) WHERE status IN ('held', 'dead');
-- `ordering: entity`: the unsettled deliveries of one entity, in order, to find its head.
CREATE INDEX destination_deliveries_entity_idx ON hookgate.destination_deliveries
  (endpoint, destination, entity_key, entity_version, id)
  WHERE entity_key IS NOT NULL AND status IN ('pending', 'sending', 'retrying', 'held');
-- Retention (`hookgate prune`): delivered rows, oldest settled first.
CREATE INDEX destination_deliveries_settled_idx ON hookgate.destination_deliveries (settled_at)
  WHERE status = 'delivered';
-- Listing one destination's deliveries, newest first.
CREATE INDEX destination_deliveries_list_idx ON hookgate.destination_deliveries (endpoint, destination, id);

-- Every attempt of a delivery: when, how long, what came back (its first bytes).
CREATE TABLE hookgate.destination_attempts (
  delivery_id   bigint      NOT NULL REFERENCES hookgate.destination_deliveries (id) ON DELETE CASCADE,
  attempt       integer     NOT NULL,
  started_at    timestamptz NOT NULL,
  duration_ms   integer     NOT NULL,
  http_status   integer,
  error         text,
  response_head text,
  PRIMARY KEY (delivery_id, attempt)
);

-- A destination's operator state: paused (its deliveries held) and who changed it last.
CREATE TABLE hookgate.destination_state (
  endpoint    text        NOT NULL,
  destination text        NOT NULL,
  paused      boolean     NOT NULL DEFAULT false,
  changed_by  text        NOT NULL,
  changed_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (endpoint, destination)
);

-- A destination's rate limit (`rateLimit`), shared by every worker: a token bucket refilled at
-- the configured rate up to its burst, taken from (row-locked) as deliveries are claimed.
CREATE TABLE hookgate.destination_rate (
  endpoint    text             NOT NULL,
  destination text             NOT NULL,
  tokens      double precision NOT NULL,
  tokens_at   timestamptz      NOT NULL,
  PRIMARY KEY (endpoint, destination)
);

-- A destination's circuit breaker (`breaker`), shared by every worker. closed: deliveries flow;
-- open: none is attempted (they wait, their retries unspent) until `cooldown` after opened_at;
-- half_open: one probe is in flight (until probe_until, its lease): a success closes the breaker,
-- a failure opens it again.
CREATE TABLE hookgate.destination_breaker (
  endpoint             text        NOT NULL,
  destination          text        NOT NULL,
  state                text        NOT NULL CHECK (state IN ('closed', 'open', 'half_open')),
  consecutive_failures integer     NOT NULL DEFAULT 0,
  opened_at            timestamptz,
  probe_until          timestamptz,
  PRIMARY KEY (endpoint, destination)
);
