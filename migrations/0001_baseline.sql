-- hookgate 0.1.0's schema, created at once: every migration after this one is
-- expand-then-contract (docs/releases.md). Schemas: hookgate (the gateway's and worker's tables),
-- billing (the reference handler's). pg-boss installs its own schema, pgboss, after this file;
-- the roles are granted by services/core/db/roles.ts at the end of every migrate.
CREATE SCHEMA IF NOT EXISTS hookgate;
CREATE SCHEMA IF NOT EXISTS billing;

-- ---------------------------------------------------------------------------------------------
-- The inbox: one row per (endpoint, event_id), written by the gateway's claim and settled by the
-- worker, partitioned by received_at so that retention drops a week's partition instead of
-- deleting its rows one by one (docs/storage.md, "The partitioned inbox"). A unique index on a
-- partitioned table must contain the partition key, so (endpoint, event_id) cannot be its primary
-- key: hookgate.inbox_keys below is the deduplication key, kept by triggers on every insert.
CREATE TABLE hookgate.inbox (
  endpoint            text        NOT NULL,
  event_id            text        NOT NULL,
  provider            text        NOT NULL,
  event_type          text        NOT NULL,
  entity_type         text,
  entity_id           text,
  -- Normalised by the gateway: integers as given, RFC 3339 timestamps as epoch microseconds.
  entity_version      bigint,
  -- The verified body.
  payload             jsonb       NOT NULL,
  headers             jsonb       NOT NULL DEFAULT '{}'::jsonb,
  -- `discarded`: a parked or dead event an operator settled for good (`hookgate discard`), with
  -- who, why and when below; final and kept: prune never deletes it, requeue moves it only when
  -- asked (`--status discarded`).
  status              text        NOT NULL DEFAULT 'pending'
                      CONSTRAINT inbox_status_check
                      CHECK (status IN ('pending', 'processed', 'ignored', 'stale', 'parked', 'dead', 'discarded')),
  attempts            integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  last_error          text,
  received_at         timestamptz NOT NULL DEFAULT now(),
  processed_at        timestamptz,
  traceparent         text,
  -- Attempts counted before the latest requeue (or observe-mode redispatch), from which the
  -- event's budget of attempts starts again; `attempts` keeps counting across requeues.
  requeued_attempts   integer     NOT NULL DEFAULT 0 CHECK (requeued_attempts >= 0),
  -- Where a provider signs only the body and the event id travels in an unsigned header (GitHub,
  -- Shopify, hmac with eventIdHeader), a captured body re-sent under a new id header verifies:
  -- the claim then also stores the SHA-256 of the payload's jsonb text (claim-sql.ts,
  -- bodyDigestOf, on the gateway's path and the replay's alike), unique per endpoint in
  -- inbox_keys. Null for providers that sign their id.
  body_digest         bytea,
  -- How a row arrived when not as a signed delivery from its provider: 'replay_token' (re-posted
  -- with the endpoint's replay token) or 'api_replay' (pulled from the provider's API by
  -- `hookgate replay`). Null for ordinary deliveries.
  received_via        text,
  -- The attempts an event had made when its current job was sent (0 at its claim; its attempts
  -- so far at every dispatch after: a failed attempt sent again with a backoff, a requeue, a
  -- sweep). An attempt's number is dispatched_attempts plus the job's retry count plus one, so a
  -- job pg-boss tries again after a lost worker counts on (docs/design-notes.md, "Dispatch: one
  -- job per claim batch").
  dispatched_attempts integer     NOT NULL DEFAULT 0 CHECK (dispatched_attempts >= 0),
  -- The job that carries the event now. Only that job applies it: a job it was taken from (a
  -- row sent again after a failure, a requeue, a sweep) skips it. Null for sync-mode rows
  -- (applied in their claim's own transaction).
  dispatch_job        uuid,
  -- When its next attempt may start (its job's start_after), for people and for the sweeper.
  next_attempt_at     timestamptz,
  -- Set, and committed, right before an event is applied on its own after a lost attempt;
  -- cleared when that apply ends. Still set afterwards only if the worker died during it: the
  -- event may be what kills workers, and is applied after its neighbours.
  lone_apply_at       timestamptz,
  discarded_at        timestamptz,
  discarded_by        text,
  discard_reason      text,
  CHECK (length(event_id) BETWEEN 1 AND 512)
) PARTITION BY RANGE (received_at);

-- Rows no dated partition covers: the unsettled rows kept from dropped weeks, and rows of a time
-- that had no partition. The dated partitions are made by inbox_create_partitions below.
CREATE TABLE hookgate.inbox_default PARTITION OF hookgate.inbox DEFAULT;

-- The inbox's indexes, on every partition. Created in this order (by name), which decides the
-- names PostgreSQL gives each partition's copies (inbox_p…_endpoint_received_at_idx is the
-- discarded one's, …_idx1 the pending one's).
-- Discarded events by endpoint and age, for `requeue --status discarded` and `stats`.
CREATE INDEX inbox_discarded_idx ON hookgate.inbox (endpoint, received_at) WHERE status = 'discarded';
-- The console's event search (services/console/read-models/events-sql.ts): one entity's events,
-- newest first; payload containment (`payload @> '{"data":{"object":{"customer":"cus_…"}}}'`)
-- through a GIN index with jsonb_path_ops, which serves exactly @>.
CREATE INDEX inbox_entity_idx ON hookgate.inbox (entity_id, received_at) WHERE entity_id IS NOT NULL;
-- By key: the apply's lock and settle, requeue, `events show`.
CREATE INDEX inbox_key_idx ON hookgate.inbox (endpoint, event_id);
CREATE INDEX inbox_payload_path_idx ON hookgate.inbox USING gin (payload jsonb_path_ops);
-- Unsettled rows only: backlog and oldest-age queries stay the size of the backlog, not of the
-- history.
CREATE INDEX inbox_pending_idx ON hookgate.inbox (endpoint, received_at) WHERE status = 'pending';
-- Settled rows by age, for retention of rows no dated partition holds.
CREATE INDEX inbox_received_at_idx ON hookgate.inbox (received_at);
CREATE INDEX inbox_stuck_idx ON hookgate.inbox (endpoint, status, received_at)
  WHERE status IN ('parked', 'dead');

-- The deduplication key: one thin row per event, kept by the triggers below whoever inserts into
-- the inbox (the claim, a quarantine release). It outlives a dropped partition until prune's keys
-- pass (services/core/inbox/partitions.ts).
CREATE TABLE hookgate.inbox_keys (
  endpoint    text        NOT NULL,
  event_id    text        NOT NULL,
  -- Set for providers whose event id travels in an unsigned header (claim-sql.ts, bodyDigestOf).
  body_digest bytea,
  -- The inbox row's received_at: which partition holds it, and when its key may go.
  received_at timestamptz NOT NULL,
  PRIMARY KEY (endpoint, event_id)
);
CREATE UNIQUE INDEX inbox_keys_body_digest_key ON hookgate.inbox_keys (endpoint, body_digest)
  WHERE body_digest IS NOT NULL;
-- Retention of keys, walked oldest first from a cursor once their partition is gone.
CREATE INDEX inbox_keys_received_at_idx ON hookgate.inbox_keys (received_at);

-- The inbox's dated range partitions, as the functions below made them.
CREATE TABLE hookgate.inbox_partitions (
  name       text        PRIMARY KEY,
  from_at    timestamptz NOT NULL,
  to_at      timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  CHECK (from_at < to_at)
);

-- A row whose key (or body digest) is taken is not inserted, exactly as ON CONFLICT DO NOTHING on
-- a primary key would do: the statement's RETURNING leaves it out, so the claim answers it as a
-- duplicate. ON CONFLICT DO NOTHING on the key waits for a concurrent insert of the same key to
-- commit or roll back, so a duplicate is only acknowledged once the original is durable. The one
-- writer that re-inserts rows whose keys it keeps is inbox_drop_partition below, moving rows it
-- must not lose (it says so in a setting local to its transaction).
--
-- Unlike the other key triggers, this one runs as whoever inserts (every claim calls it, once a
-- row, and a SECURITY DEFINER function's switch of user and settings is paid on each call): the
-- roles that insert into the inbox are granted INSERT on the keys (services/core/db/roles.ts).
CREATE FUNCTION hookgate.inbox_claim_key() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  -- The row an UPDATE of received_at is moving to another partition (inbox_move_key) keeps its key.
  IF current_setting('hookgate.inbox_moving_key', true) = NEW.endpoint || E'\x1f' || NEW.event_id THEN
    PERFORM set_config('hookgate.inbox_moving_key', '', true);
    RETURN NEW;
  END IF;
  IF current_setting('hookgate.inbox_moving', true) IS DISTINCT FROM 'on' THEN
    INSERT INTO hookgate.inbox_keys (endpoint, event_id, body_digest, received_at)
    VALUES (NEW.endpoint, NEW.event_id, NEW.body_digest, NEW.received_at)
    ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
      RETURN NULL;
    END IF;
  END IF;
  RETURN NEW;
END $$;

-- The rarely called key triggers below write hookgate.inbox_keys as this migration's owner
-- (SECURITY DEFINER, search_path pinned): whoever changes inbox rows needs no grant on the keys
-- for them. A trigger function cannot be called other than as a trigger.
--
-- An UPDATE that changes received_at (nothing in hookgate does; tests and operators age rows so)
-- moves the row to the partition of its new time: PostgreSQL deletes it there and inserts it here,
-- firing the insert trigger above, which would find the row's own key taken and drop the row.
-- This trigger carries the key along (its received_at follows the row) and tells the insert
-- trigger, for this one key, that the row is its own. The key itself never changes.
CREATE FUNCTION hookgate.inbox_move_key() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF NEW.endpoint IS DISTINCT FROM OLD.endpoint OR NEW.event_id IS DISTINCT FROM OLD.event_id THEN
    RAISE EXCEPTION 'an inbox row''s endpoint and event_id are its deduplication key and never change'
      USING ERRCODE = '22023';
  END IF;
  IF NEW.received_at IS DISTINCT FROM OLD.received_at THEN
    UPDATE hookgate.inbox_keys SET received_at = NEW.received_at
     WHERE endpoint = NEW.endpoint AND event_id = NEW.event_id;
    PERFORM set_config('hookgate.inbox_moving_key', NEW.endpoint || E'\x1f' || NEW.event_id, true);
  END IF;
  RETURN NEW;
END $$;

-- A row deleted (retention of rows no dated partition holds, or an operator's DELETE) takes its
-- key with it. Not the row an UPDATE of received_at is moving (the delete half of that move).
-- Dropping a partition deletes no rows one by one and fires nothing: the keys of its rows go with
-- prune's keys pass.
CREATE FUNCTION hookgate.inbox_forget_key() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF current_setting('hookgate.inbox_moving_key', true) IS DISTINCT FROM OLD.endpoint || E'\x1f' || OLD.event_id THEN
    DELETE FROM hookgate.inbox_keys WHERE endpoint = OLD.endpoint AND event_id = OLD.event_id;
  END IF;
  RETURN OLD;
END $$;

-- TRUNCATE of the inbox (an operator's or a test's: no hookgate role may) forgets every event. A
-- partition truncated alone does not fire this; its keys are pruned once that partition's days
-- are past the window.
CREATE FUNCTION hookgate.inbox_truncate_keys() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE hookgate.inbox_keys;
  RETURN NULL;
END $$;

CREATE TRIGGER inbox_claim_key BEFORE INSERT ON hookgate.inbox
  FOR EACH ROW EXECUTE FUNCTION hookgate.inbox_claim_key();
CREATE TRIGGER inbox_forget_key BEFORE DELETE ON hookgate.inbox
  FOR EACH ROW EXECUTE FUNCTION hookgate.inbox_forget_key();
CREATE TRIGGER inbox_truncate_keys AFTER TRUNCATE ON hookgate.inbox
  FOR EACH STATEMENT EXECUTE FUNCTION hookgate.inbox_truncate_keys();
-- Fires only for UPDATEs that name these columns: never the apply's or the claim's.
CREATE TRIGGER inbox_move_key BEFORE UPDATE OF endpoint, event_id, received_at ON hookgate.inbox
  FOR EACH ROW EXECUTE FUNCTION hookgate.inbox_move_key();

-- One lock for whoever changes the set of partitions (migrate, prune, workers), so two never
-- race to create the same week.
CREATE FUNCTION hookgate.inbox_partitions_lock() RETURNS void
LANGUAGE sql AS $$ SELECT pg_advisory_xact_lock(7311540201) $$;

-- Creates the partitions missing between the last one and p_until, p_days wide each, named
-- after their first day (inbox_p20261202, UTC). Run by the migration's owner on behalf of the
-- runtime role (SECURITY DEFINER: creating tables is DDL, which the runtime may not do). A
-- partition is created apart and then attached, which takes only a SHARE UPDATE EXCLUSIVE lock
-- on the inbox (claims and applies go on); the attach reads the default partition (rows no dated
-- partition covers: normally only held rows of dropped weeks, a few) for rows of the new range.
-- If partitions were not made ahead in time and the default partition holds rows of the days
-- that were missed, those days stay in the default partition (pruned row by row) and the new
-- partitions start tomorrow.
CREATE FUNCTION hookgate.inbox_create_partitions(p_until timestamptz, p_days integer)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET lock_timeout = '2s' AS $$
DECLARE
  lo timestamptz;
  hi timestamptz;
  part text;
  made integer := 0;
BEGIN
  IF p_days IS NULL OR p_days NOT BETWEEN 1 AND 31 THEN
    RAISE EXCEPTION 'inbox partitions are 1 to 31 days wide, not %', p_days USING ERRCODE = '22023';
  END IF;
  IF p_until > now() + interval '93 days' THEN
    RAISE EXCEPTION 'inbox partitions are made at most 93 days ahead, not until %', p_until USING ERRCODE = '22023';
  END IF;
  PERFORM hookgate.inbox_partitions_lock();
  SELECT max(to_at) INTO lo FROM hookgate.inbox_partitions;
  IF lo IS NULL THEN
    lo := date_trunc('day', now(), 'UTC');
  END IF;
  IF lo < now() AND EXISTS (SELECT 1 FROM hookgate.inbox_default WHERE received_at >= lo) THEN
    lo := date_trunc('day', now(), 'UTC') + interval '1 day';
  END IF;
  WHILE lo < p_until LOOP
    hi := lo + make_interval(days => p_days);
    part := 'inbox_p' || to_char(lo AT TIME ZONE 'UTC', 'YYYYMMDD');
    EXECUTE format(
      'CREATE TABLE hookgate.%I (LIKE hookgate.inbox INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMPRESSION)',
      part);
    EXECUTE format('ALTER TABLE hookgate.inbox ATTACH PARTITION hookgate.%I FOR VALUES FROM (%L) TO (%L)', part, lo, hi);
    INSERT INTO hookgate.inbox_partitions (name, from_at, to_at) VALUES (part, lo, hi);
    made := made + 1;
    lo := hi;
  END LOOP;
  RETURN made;
END $$;

-- Retention of one partition whose whole range ends at or before p_before: rows still waiting
-- (pending) or stopped for an operator (parked, dead) or discarded (kept by design) are moved
-- into the default partition with their keys untouched, the settled rest goes with the table.
-- DETACH takes an ACCESS EXCLUSIVE lock on the inbox for this short transaction (lock_timeout
-- bounds how long claims can queue behind it: the caller retries later). A partition holding
-- more than p_max_moved such rows is left alone (moving them would hold that lock too long):
-- `moved` comes back null and `kept` says how many there are at least.
CREATE FUNCTION hookgate.inbox_drop_partition(p_name text, p_before timestamptz, p_max_moved integer)
RETURNS TABLE (moved bigint, kept bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET lock_timeout = '1s' AS $$
DECLARE
  bound timestamptz;
  cols text;
  n bigint;
  unsettled constant text :=
    'SELECT * FROM hookgate.%1$I WHERE status = ''pending'''
    ' UNION ALL SELECT * FROM hookgate.%2$I WHERE status IN (''parked'', ''dead'')'
    ' UNION ALL SELECT * FROM hookgate.%3$I WHERE status = ''discarded''';
BEGIN
  PERFORM hookgate.inbox_partitions_lock();
  SELECT to_at INTO bound FROM hookgate.inbox_partitions WHERE name = p_name;
  IF NOT FOUND OR bound > p_before THEN
    RAISE EXCEPTION 'inbox partition % does not end before %', p_name, p_before USING ERRCODE = '22023';
  END IF;
  -- Each arm matches one of the inbox's partial indexes (pending, stuck, discarded), so these
  -- rows are found without reading the partition: the move below runs under the inbox's lock.
  EXECUTE format(
    'SELECT count(*) FROM (SELECT 1 FROM (%s) u LIMIT %s) x',
    format(unsettled, p_name, p_name, p_name), p_max_moved + 1) INTO n;
  IF n > p_max_moved THEN
    RETURN QUERY SELECT NULL::bigint, n;
    RETURN;
  END IF;
  EXECUTE format('ALTER TABLE hookgate.inbox DETACH PARTITION hookgate.%I', p_name);
  SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) INTO cols
    FROM pg_attribute WHERE attrelid = 'hookgate.inbox'::regclass AND attnum > 0 AND NOT attisdropped;
  PERFORM set_config('hookgate.inbox_moving', 'on', true);
  EXECUTE format('INSERT INTO hookgate.inbox (%s) SELECT %s FROM (%s) u', cols, cols,
    format(unsettled, p_name, p_name, p_name));
  GET DIAGNOSTICS n = ROW_COUNT;
  PERFORM set_config('hookgate.inbox_moving', 'off', true);
  EXECUTE format('DROP TABLE hookgate.%I', p_name);
  DELETE FROM hookgate.inbox_partitions WHERE name = p_name;
  RETURN QUERY SELECT n, 0::bigint;
END $$;

-- Granted to hookgate_runtime alone (roles.ts).
REVOKE ALL ON FUNCTION hookgate.inbox_create_partitions(timestamptz, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION hookgate.inbox_drop_partition(text, timestamptz, integer) FROM PUBLIC;

-- `body: raw` destinations (docs/destinations.md): the provider's original request bytes and the
-- headers those destinations pass through (a signature the receiver re-verifies), kept beside
-- the inbox row, written by the claim in its transaction, only for endpoints that have a
-- `body: raw` destination. A table of its own, not a column of the inbox: the inbox row is
-- updated as it is dispatched and settled, and each update would copy the bytes into a new row
-- version; these rows are written once and deleted once, by `hookgate prune` once their inbox row
-- is gone (services/core/inbox/raw-bodies.ts).
CREATE TABLE hookgate.inbox_raw (
  endpoint    text        NOT NULL,
  event_id    text        NOT NULL,
  body        bytea       NOT NULL,
  -- The configured pass-through headers as received (lower-case names), only those present.
  headers     jsonb       NOT NULL DEFAULT '{}'::jsonb,
  received_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (endpoint, event_id)
);
-- Retention: walked oldest first from a cursor.
CREATE INDEX inbox_raw_received_at_idx ON hookgate.inbox_raw (received_at);

-- Deliveries per endpoint and minute, written by the gateway's claim (one upsert per claim
-- batch), so `hookgate stats` can give the duplicate rate from the database alone. A duplicate
-- costs an increment here, never a row of its own. `shard` spreads concurrent claim transactions
-- over several rows of the same minute: each claim connection writes the shard of its backend
-- pid, so transactions on different connections rarely wait for each other's row lock until
-- COMMIT. Readers sum the shards.
CREATE TABLE hookgate.delivery_counts (
  endpoint   text        NOT NULL,
  minute     timestamptz NOT NULL,
  shard      smallint    NOT NULL,
  accepted   bigint      NOT NULL DEFAULT 0 CHECK (accepted >= 0),
  duplicate  bigint      NOT NULL DEFAULT 0 CHECK (duplicate >= 0),
  PRIMARY KEY (endpoint, minute, shard)
);
-- `hookgate stats` sums a window's minutes across every endpoint; prune deletes oldest first.
CREATE INDEX delivery_counts_minute_idx ON hookgate.delivery_counts (minute);

-- ---------------------------------------------------------------------------------------------
-- What the handlers write.

-- Latest state per entity with the version it came from (the `project` handler). Writes carry
-- `WHERE entity_state.version < EXCLUDED.version`, so a version never moves backwards.
CREATE TABLE hookgate.entity_state (
  endpoint     text        NOT NULL,
  entity_type  text        NOT NULL,
  entity_id    text        NOT NULL,
  version      bigint      NOT NULL,
  state        jsonb       NOT NULL,
  -- The event whose payload is the current state.
  event_id     text        NOT NULL,
  updated_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (endpoint, entity_type, entity_id)
);

-- The billing reference domain (handler `billing`): Stripe-shaped invoices and subscriptions
-- and a ledger whose business key makes a payment bookable once, whatever event carries it.
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

-- What the relay did with each downstream effect of `handler: forward` and billing's `notify`,
-- keyed like the effect itself (its kind and idempotency key). It outlives pg-boss's job
-- retention, so replaying an event months later finds `delivered` here and sends nothing.
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
-- Retention walks settled rows oldest first, the ones it deletes.
CREATE INDEX outbox_deliveries_settled_idx ON hookgate.outbox_deliveries (settled_at)
  WHERE status IN ('delivered', 'nowhere');

-- ---------------------------------------------------------------------------------------------
-- Operations (docs/cli.md): the audit trail, pauses, the per-attempt history.

-- One row per operator action (requeue, discard, pause, resume, replay, reconcile, prune,
-- redeliver, a destination's pause and resume, quarantine release and drop), dry runs included,
-- written by services/core/audit/. `event_ids` keeps at most the first 1000 events an action
-- touched (`count` says how many in all), so one row stays small whatever the action moved; its
-- GIN index serves `events show`'s "which actions touched this event". `hookgate prune` deletes
-- rows older than `--audit-older-than` (default 365d) through audit_at_idx.
CREATE TABLE hookgate.audit (
  id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at         timestamptz NOT NULL DEFAULT now(),
  actor      text        NOT NULL CHECK (length(actor) BETWEEN 1 AND 200),
  command    text        NOT NULL CHECK (length(command) BETWEEN 1 AND 63),
  endpoint   text,
  filters    jsonb       NOT NULL DEFAULT '{}'::jsonb,
  count      bigint      NOT NULL CHECK (count >= 0),
  dry_run    boolean     NOT NULL,
  reason     text        CHECK (length(reason) <= 1000),
  event_ids  text[]      NOT NULL DEFAULT '{}' CHECK (cardinality(event_ids) <= 1000)
);
CREATE INDEX audit_at_idx ON hookgate.audit (at);
CREATE INDEX audit_endpoint_at_idx ON hookgate.audit (endpoint, at) WHERE endpoint IS NOT NULL;
CREATE INDEX audit_event_ids_idx ON hookgate.audit USING gin (event_ids);

-- An endpoint's processing held by an operator (`hookgate pause` / `resume`). One row per
-- endpoint ever paused, written by services/core/pause/pause.ts; `paused_at` set means paused.
-- Workers read it (cached for a second) before fetching an endpoint's jobs, and apply
-- transactions hold a shared advisory lock that `pause` takes exclusively, so once `pause` has
-- returned no apply of the endpoint commits. The gateway never reads it: deliveries are still
-- verified, claimed and acknowledged.
CREATE TABLE hookgate.endpoint_state (
  endpoint      text        PRIMARY KEY,
  paused_at     timestamptz,
  paused_by     text,
  pause_reason  text        CHECK (length(pause_reason) <= 1000),
  updated_at    timestamptz NOT NULL DEFAULT now()
);
-- The paused endpoints (the pause gauges, stats, the workers' pause watch): the few rows in an
-- unusual state, found without reading the table.
CREATE INDEX endpoint_state_paused_idx ON hookgate.endpoint_state (endpoint) WHERE paused_at IS NOT NULL;

-- One row per apply attempt of an event (when it started, which worker, how it ended, its error,
-- how long its batch took), written by the apply engine in the attempt's own transaction
-- (services/core/attempts/attempts.ts) and read by `events show`. Deleted by `hookgate prune`
-- with the inbox window (oldest first, through apply_attempts_at_idx), whatever the event's
-- status; an event's attempts are bounded by its retry budget per requeue.
CREATE TABLE hookgate.apply_attempts (
  id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  endpoint       text        NOT NULL,
  event_id       text        NOT NULL,
  attempt        integer     NOT NULL CHECK (attempt >= 1),
  at             timestamptz NOT NULL DEFAULT now(),
  worker         text        NOT NULL,
  outcome        text        NOT NULL,
  error_code     text,
  error_message  text        CHECK (length(error_message) <= 2000),
  duration_ms    double precision NOT NULL CHECK (duration_ms >= 0)
);
CREATE INDEX apply_attempts_event_idx ON hookgate.apply_attempts (endpoint, event_id, at);
CREATE INDEX apply_attempts_at_idx ON hookgate.apply_attempts (at);

-- ---------------------------------------------------------------------------------------------
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
-- a failure opens it again. It may also open on a failure rate: the attempts and failures
-- counted in its current window, which starts at the window's first attempt.
CREATE TABLE hookgate.destination_breaker (
  endpoint             text        NOT NULL,
  destination          text        NOT NULL,
  state                text        NOT NULL CHECK (state IN ('closed', 'open', 'half_open')),
  consecutive_failures integer     NOT NULL DEFAULT 0,
  opened_at            timestamptz,
  probe_until          timestamptz,
  rate_since           timestamptz,
  rate_attempts        integer     NOT NULL DEFAULT 0,
  rate_failures        integer     NOT NULL DEFAULT 0,
  PRIMARY KEY (endpoint, destination)
);
-- The breakers not closed (the destination gauges): the few rows in an unusual state.
CREATE INDEX destination_breaker_unclosed_idx ON hookgate.destination_breaker (endpoint, destination)
  WHERE state <> 'closed';

-- ---------------------------------------------------------------------------------------------
-- Continuous reconciliation (services/core/reconcile/): one row per endpoint that reconciles
-- against its provider's API. The watermark says "every event the provider listed between
-- covered_since and watermark is in the inbox"; it only moves forward, over windows whose every
-- page was listed and claimed, and never in a failed run. The lease makes one run per endpoint
-- at a time, whoever starts it (a worker's scheduled job or `hookgate reconcile`): a run takes it
-- when it is free or expired, renews it while it runs, and every write of a run is fenced by it.
-- The last run's figures and the running totals feed `hookgate reconcile status` and the
-- hookgate_reconcile_* metrics. Its SQL lives in services/core/reconcile/state-sql.ts.
CREATE TABLE hookgate.reconcile_state (
  endpoint text PRIMARY KEY,
  covered_since timestamptz,
  watermark timestamptz,
  lease_owner uuid,
  lease_until timestamptz,
  last_run_started_at timestamptz,
  last_run_finished_at timestamptz,
  -- complete | budget | failed | lease_lost | stopped
  last_outcome text,
  last_error text,
  last_success_at timestamptz,
  last_listed integer NOT NULL DEFAULT 0,
  last_present integer NOT NULL DEFAULT 0,
  last_filled integer NOT NULL DEFAULT 0,
  last_unusable integer NOT NULL DEFAULT 0,
  last_delivery_failures integer NOT NULL DEFAULT 0,
  last_api_calls integer NOT NULL DEFAULT 0,
  last_duration_ms integer NOT NULL DEFAULT 0,
  -- Running totals since the row was made: events found missing (and filled), runs.
  missing_total bigint NOT NULL DEFAULT 0,
  runs_total bigint NOT NULL DEFAULT 0,
  CHECK (watermark IS NULL OR covered_since <= watermark)
);

-- ---------------------------------------------------------------------------------------------
-- Quarantine (docs/architecture.md, promise 8): a delivery whose signature verified but that
-- cannot become an inbox event (version_invalid, payload_unstorable, event_id_invalid,
-- event_type_missing) is kept here and acknowledged, never applied until an operator releases it.
-- Written only by services/core/quarantine/.
--
-- Bounded: one row per distinct body per endpoint (`body_digest`, SHA-256 of the raw body, is
-- unique per endpoint, so a provider's retries of the same body are stored once), each body at
-- most the endpoint's body limit (the gateway reads no more), at most
-- quarantine.maxHeldPerEndpoint held rows per endpoint, and released or dropped rows deleted by
-- `hookgate prune --quarantine-older-than` (default 7d). Unverified deliveries never get here
-- (promise 2).
CREATE TABLE hookgate.quarantine (
  id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  endpoint      text        NOT NULL,
  received_at   timestamptz NOT NULL DEFAULT now(),
  reason        text        NOT NULL CHECK (length(reason) BETWEEN 1 AND 63),
  message       text        NOT NULL CHECK (length(message) <= 1000),
  body          bytea       NOT NULL,
  headers       jsonb       NOT NULL DEFAULT '{}'::jsonb,
  body_digest   bytea       NOT NULL CHECK (length(body_digest) = 32),
  released_at   timestamptz,
  dropped_at    timestamptz,
  settled_by    text,
  settle_reason text        CHECK (length(settle_reason) <= 1000),
  UNIQUE (endpoint, body_digest)
);
CREATE INDEX quarantine_held_idx ON hookgate.quarantine (endpoint, received_at)
  WHERE released_at IS NULL AND dropped_at IS NULL;
-- Retention walks settled rows oldest first by the time they were released or dropped.
CREATE INDEX quarantine_settled_idx ON hookgate.quarantine ((coalesce(released_at, dropped_at)))
  WHERE released_at IS NOT NULL OR dropped_at IS NOT NULL;
-- The held-rows gauge and the cap's count read held rows per endpoint and reason from this
-- partial index only: its size is the held rows, never the table's.
CREATE INDEX quarantine_held_reason_idx ON hookgate.quarantine (endpoint, reason)
  WHERE released_at IS NULL AND dropped_at IS NULL;
