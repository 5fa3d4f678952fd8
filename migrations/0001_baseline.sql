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
  -- inbox_keys. Null for providers that sign their id, and null in the row once claimed: the
  -- claim's key trigger keeps the digest in the keys only (what every duplicate check reads, and
  -- what outlives the row), so it is stored once.
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
  CHECK (length(event_id) BETWEEN 1 AND 512),
  -- True for rows of endpoints with `payloadSearch: true` (set by the claim, a replay, a
  -- reconciliation and a quarantine release): only those are in the console's payload index,
  -- the largest thing an event would otherwise store beyond its payload (docs/storage.md). Null,
  -- not false, for the others: a null costs a bit in the row's null bitmap, a false a byte and
  -- its alignment.
  payload_search      boolean
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
-- through a GIN index with jsonb_path_ops, which serves exactly @>, over the rows of endpoints
-- that ask for it (payload_search); the console searches other payloads among the newest rows it
-- reads (console.scanRows).
CREATE INDEX inbox_entity_idx ON hookgate.inbox (entity_id, received_at) WHERE entity_id IS NOT NULL;
-- By key: the apply's lock and settle, requeue, `events show`.
CREATE INDEX inbox_key_idx ON hookgate.inbox (endpoint, event_id);
CREATE INDEX inbox_payload_path_idx ON hookgate.inbox USING gin (payload jsonb_path_ops)
  WHERE payload_search;
-- Unsettled rows only: backlog and oldest-age queries stay the size of the backlog, not of the
-- history.
CREATE INDEX inbox_pending_idx ON hookgate.inbox (endpoint, received_at) WHERE status = 'pending';
-- Settled rows by age, for retention of rows no dated partition holds.
CREATE INDEX inbox_received_at_idx ON hookgate.inbox (received_at);
CREATE INDEX inbox_stuck_idx ON hookgate.inbox (endpoint, status, received_at)
  WHERE status IN ('parked', 'dead');

-- The deduplication key: one thin row per event, kept by the triggers below whoever inserts into
-- the inbox (the claim, a quarantine release). It outlives its row: a deleted row or a dropped
-- partition leaves the key until prune's keys pass (the dedupe horizon,
-- services/core/inbox/partitions.ts), so a replay or a redelivery of an event whose row was
-- pruned is still a duplicate.
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

-- Where the keys' retention has reached: keys of events received before this are gone, so a
-- replay or a reconciliation reaching further back would claim those events again. One row;
-- written by `hookgate prune`.
CREATE TABLE hookgate.inbox_keys_floor (
  singleton     boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
  pruned_before timestamptz NOT NULL
);

-- The inbox's dated range partitions, as the functions below made them.
CREATE TABLE hookgate.inbox_partitions (
  name       text        PRIMARY KEY,
  from_at    timestamptz NOT NULL,
  to_at      timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  CHECK (from_at < to_at)
);

-- A move in progress, in the transaction that makes it: the key of one row an UPDATE of
-- received_at is moving to another partition, or (endpoint null) every row inbox_drop_partition's
-- one INSERT re-inserts. Written and deleted only by the owner's functions below (no hookgate role
-- may write it); read by the claim's key trigger, which runs as the claimer (SELECT is granted;
-- nothing else is: services/core/db/roles.ts).
CREATE TABLE hookgate.inbox_moves (
  xact     xid8 NOT NULL,
  endpoint text,
  event_id text
);

-- Consumes this transaction's record of the move of one key, and says whether the row being
-- inserted is the moved row itself: the move's delete half has already taken the row from its
-- old partition (the current statement's earlier work is visible here), so a row of that key
-- still in the inbox means the insert is a second row. Called by the claim's key trigger, as the
-- claimer: EXECUTE for hookgate_runtime alone (roles.ts).
CREATE FUNCTION hookgate.inbox_take_move(p_endpoint text, p_event_id text) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  DELETE FROM hookgate.inbox_moves
   WHERE xact = pg_current_xact_id() AND endpoint = p_endpoint AND event_id = p_event_id;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  RETURN NOT EXISTS (SELECT 1 FROM hookgate.inbox WHERE endpoint = p_endpoint AND event_id = p_event_id);
END $$;
REVOKE ALL ON FUNCTION hookgate.inbox_take_move(text, text) FROM PUBLIC;

-- A row whose key (or body digest) is taken is not inserted, exactly as ON CONFLICT DO NOTHING on
-- a primary key would do: the statement's RETURNING leaves it out, so the claim answers it as a
-- duplicate. ON CONFLICT DO NOTHING on the key waits for a concurrent insert of the same key to
-- commit or roll back, so a duplicate is only acknowledged once the original is durable. A row is
-- let in over its own key only when the owner's functions are moving that very row (an UPDATE of
-- received_at, inbox_drop_partition's re-insert of the rows it must not lose), which they record
-- in hookgate.inbox_moves: no session setting switches deduplication off.
--
-- Unlike the other key triggers, this one runs as whoever inserts (every claim calls it, once a
-- row, and a SECURITY DEFINER function's switch of user and settings is paid on each call): the
-- roles that insert into the inbox are granted INSERT on the keys, SELECT on inbox_moves and
-- EXECUTE on inbox_take_move (services/core/db/roles.ts).
CREATE FUNCTION hookgate.inbox_claim_key() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  mine xid8;
  whole boolean;
BEGIN
  INSERT INTO hookgate.inbox_keys (endpoint, event_id, body_digest, received_at)
  VALUES (NEW.endpoint, NEW.event_id, NEW.body_digest, NEW.received_at)
  ON CONFLICT DO NOTHING;
  IF FOUND THEN
    NEW.body_digest := NULL;
    RETURN NEW;
  END IF;
  -- A transaction that has written nothing yet has recorded no move: no xid is taken for it.
  mine := pg_catalog.pg_current_xact_id_if_assigned();
  IF mine IS NULL THEN
    RETURN NULL;
  END IF;
  SELECT m.endpoint IS NULL INTO whole
    FROM hookgate.inbox_moves m
   WHERE m.xact = mine
     AND (m.endpoint IS NULL OR (m.endpoint = NEW.endpoint AND m.event_id = NEW.event_id))
   ORDER BY m.endpoint NULLS FIRST
   LIMIT 1;
  IF whole THEN
    RETURN NEW;
  END IF;
  IF whole IS NOT NULL AND hookgate.inbox_take_move(NEW.endpoint, NEW.event_id) THEN
    RETURN NEW;
  END IF;
  RETURN NULL;
END $$;

-- The rarely called key trigger below writes hookgate.inbox_keys and hookgate.inbox_moves as this
-- migration's owner (SECURITY DEFINER, search_path pinned): whoever changes inbox rows needs no
-- grant on them for it. A trigger function cannot be called other than as a trigger.
--
-- An UPDATE that changes received_at (nothing in hookgate does; tests and operators age rows so)
-- moves the row to the partition of its new time: PostgreSQL deletes it there and inserts it here,
-- firing the insert trigger above, which would find the row's own key taken and drop the row.
-- This trigger carries the key along (its received_at follows the row: its horizon is counted
-- from it) and records the move in inbox_moves, which tells the insert trigger, for this one key,
-- that the row is its own. An update that keeps the row in its partition leaves its record
-- unused: records of transactions that have ended are cleared here. The key itself never changes.
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
    DELETE FROM hookgate.inbox_moves WHERE xact < pg_snapshot_xmin(pg_current_snapshot());
    INSERT INTO hookgate.inbox_moves (xact, endpoint, event_id)
    VALUES (pg_current_xact_id(), NEW.endpoint, NEW.event_id);
  END IF;
  RETURN NEW;
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

-- No trigger on DELETE: a deleted row keeps its key (retention of rows no dated partition holds,
-- an operator's DELETE), as the rows of a dropped partition do; keys go with their own retention.
CREATE TRIGGER inbox_claim_key BEFORE INSERT ON hookgate.inbox
  FOR EACH ROW EXECUTE FUNCTION hookgate.inbox_claim_key();
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
-- into the default partition with their keys untouched (re-inserted under a record of this
-- transaction in inbox_moves), the settled rest goes with the table and is counted (`dropped`:
-- counted before the inbox's lock is taken, reading the partition, which no claim writes any
-- more, since its whole range is past).
-- DETACH takes an ACCESS EXCLUSIVE lock on the inbox for this short transaction (lock_timeout
-- bounds how long claims can queue behind it: the caller retries later). A partition holding
-- more than p_max_moved such rows is left alone (moving them would hold that lock too long):
-- `moved` comes back null and `kept` says how many there are at least.
CREATE FUNCTION hookgate.inbox_drop_partition(p_name text, p_before timestamptz, p_max_moved integer)
RETURNS TABLE (moved bigint, kept bigint, dropped bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET lock_timeout = '1s' AS $$
DECLARE
  bound timestamptz;
  cols text;
  n bigint;
  total bigint;
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
    RETURN QUERY SELECT NULL::bigint, n, NULL::bigint;
    RETURN;
  END IF;
  EXECUTE format('SELECT count(*) FROM hookgate.%I', p_name) INTO total;
  EXECUTE format('ALTER TABLE hookgate.inbox DETACH PARTITION hookgate.%I', p_name);
  SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) INTO cols
    FROM pg_attribute WHERE attrelid = 'hookgate.inbox'::regclass AND attnum > 0 AND NOT attisdropped;
  -- For this one statement only: nothing else runs in this transaction between the record and
  -- its removal, and the statement inserts only the detached partition's rows.
  INSERT INTO hookgate.inbox_moves (xact, endpoint, event_id) VALUES (pg_current_xact_id(), NULL, NULL);
  EXECUTE format('INSERT INTO hookgate.inbox (%s) SELECT %s FROM (%s) u', cols, cols,
    format(unsettled, p_name, p_name, p_name));
  GET DIAGNOSTICS n = ROW_COUNT;
  DELETE FROM hookgate.inbox_moves WHERE xact = pg_current_xact_id() AND endpoint IS NULL;
  EXECUTE format('DROP TABLE hookgate.%I', p_name);
  DELETE FROM hookgate.inbox_partitions WHERE name = p_name;
  RETURN QUERY SELECT n, 0::bigint, total - n;
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
  -- What the destination answered, kept as it came (docs/destinations.md, "Attempts"): the first
  -- bytes of its body as bytes, whatever they are (a NUL, UTF-16, invalid UTF-8: a text column
  -- cannot hold them all), and its headers as escaped text. `response_head` keeps the readable
  -- rendering of those bytes (decoded, escaped, bounded).
  response_head text,
  response_bytes   bytea,
  response_headers text,
  -- The attempt's result was never recorded: its lease ran out first (its worker died, or its
  -- record could not be written). Written by the claim that takes the delivery up again; a late
  -- record of the same attempt replaces it.
  unrecorded       boolean NOT NULL DEFAULT false,
  PRIMARY KEY (delivery_id, attempt)
);

-- A destination's operator state: paused (its deliveries held) and who changed it last.
CREATE TABLE hookgate.destination_state (
  endpoint    text        NOT NULL,
  destination text        NOT NULL,
  paused      boolean     NOT NULL DEFAULT false,
  changed_by  text        NOT NULL,
  changed_at  timestamptz NOT NULL DEFAULT now(),
  -- Why it was paused, shown beside who and since when (as an endpoint's pause is).
  reason      text        CHECK (length(reason) <= 1000),
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

-- An operator's reconciliation run now (the API's reconcile start, services/core/reconcile/
-- schedule.ts): one job in pg-boss's `hookgate.reconcile` queue, through this function, so the
-- console's role, which may not write pg-boss's tables, can queue exactly this and nothing else
-- (EXECUTE for hookgate_runtime and hookgate_console: roles.ts). The queue's `stately` policy
-- keeps at most one run waiting per endpoint: null when one waits.
CREATE FUNCTION hookgate.request_reconcile_run(p_endpoint text, p_actor text, p_since timestamptz)
RETURNS uuid
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  made uuid;
BEGIN
  IF p_endpoint IS NULL OR p_endpoint !~ '^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$' THEN
    RAISE EXCEPTION 'an endpoint name is 1 to 63 letters, digits, _ or -, not %', p_endpoint
      USING ERRCODE = '22023';
  END IF;
  IF p_actor IS NULL OR length(p_actor) NOT BETWEEN 1 AND 200 THEN
    RAISE EXCEPTION 'a run names who asked for it (1 to 200 characters)' USING ERRCODE = '22023';
  END IF;
  INSERT INTO pgboss.job (
    id, name, data, priority, start_after, created_on, singleton_key, singleton_on, group_id, group_tier,
    expire_seconds, deletion_seconds, keep_until, retry_limit, retry_delay, retry_backoff, retry_delay_max,
    policy, dead_letter, heartbeat_seconds, blocked, blocking, pending_dependencies, trace_context
  )
  SELECT gen_random_uuid(), q.name,
         jsonb_build_object('endpoint', p_endpoint, 'actor', p_actor)
           || CASE WHEN p_since IS NULL THEN '{}'::jsonb
                   ELSE jsonb_build_object('since', to_char(p_since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) END,
         0, pgboss.job_now(), pgboss.job_now(), p_endpoint, NULL, NULL, NULL,
         COALESCE(q.expire_seconds, 900), COALESCE(q.deletion_seconds, 604800),
         pgboss.job_now() + COALESCE(q.retention_seconds, 1209600) * interval '1s',
         COALESCE(q.retry_limit, 0), COALESCE(q.retry_delay, 0), COALESCE(q.retry_backoff, false),
         q.retry_delay_max, q.policy, q.dead_letter, q.heartbeat_seconds, false, false, 0, NULL
    FROM pgboss.queue q
   WHERE q.name = 'hookgate.reconcile'
  ON CONFLICT DO NOTHING
  RETURNING id INTO made;
  IF NOT FOUND AND NOT EXISTS (SELECT 1 FROM pgboss.queue q WHERE q.name = 'hookgate.reconcile') THEN
    RAISE EXCEPTION 'queue hookgate.reconcile does not exist: a worker creates it when it starts'
      USING ERRCODE = 'P0002';
  END IF;
  RETURN made;
END $$;
REVOKE ALL ON FUNCTION hookgate.request_reconcile_run(text, text, timestamptz) FROM PUBLIC;

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
  -- The headers the endpoint's provider names for identifying or reading a delivery (its id,
  -- type, timestamp and delivery headers: services/core/providers/headers.ts,
  -- quarantineHeaders), never a signature or token header or a credential.
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

-- ---------------------------------------------------------------------------------------------
-- The management API (/api/v1, served by the console: docs/api.md). Two small tables, each written
-- only by its module in services/core/api/.
--
-- An action's answer by Idempotency-Key, per access token: a retried POST with the same key gets
-- the first answer back instead of acting again. A row is claimed (status NULL, locked_until set)
-- before the action runs and completed with its answer after; a claim whose console died with it
-- can be taken over once locked_until has passed. Rows live console.api.idempotencyTtl (24h by
-- default) and are deleted by the console after that, oldest first through
-- api_idempotency_created_idx; the per-token rate limit bounds how many one token can make.
CREATE TABLE hookgate.api_idempotency (
  token text NOT NULL CHECK (length(token) BETWEEN 1 AND 200),
  key text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
  -- SHA-256 of the method, the path with its query and the body: the same key sent with another
  -- request is refused (422), never answered with the first request's answer.
  request_digest bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  locked_until timestamptz,
  status smallint,
  answer jsonb,
  PRIMARY KEY (token, key)
);

CREATE INDEX api_idempotency_created_idx ON hookgate.api_idempotency (created_at);

-- When each access token was last used (the API's and the CLI's token lists), written at most once
-- a minute per token by the console that saw the request. One row per configured token name: the
-- console deletes the rows of names its configuration no longer has.
CREATE TABLE hookgate.api_token_use (
  token text PRIMARY KEY CHECK (length(token) BETWEEN 1 AND 200),
  last_used_at timestamptz NOT NULL,
  -- The client's address as the console saw it (console.trustedProxyHops applies).
  last_source text CHECK (length(last_source) <= 100)
);

-- ---------------------------------------------------------------------------------------------
-- The operators' writes (requeue, discard, quarantine release and drop), shared by the CLI and the
-- console: these SECURITY DEFINER functions (owner: this migration's, search_path pinned, EXECUTE
-- only for hookgate_runtime and hookgate_console, services/core/db/roles.ts) check their
-- arguments, lock their rows and write only apply jobs of hookgate's queues for inbox rows that
-- exist. The console's role writes no inbox row, key, delivery count or pg-boss job itself.

-- An apply job of pg-boss 12.38 for hookgate's queue of one endpoint, as services/core/queue/
-- job-rows.ts writes one (INSERT_JOB_ROWS; the contract test holds the two to the rows pg-boss
-- writes itself), except that the queue must exist: only hookgate's apply queues, by name.
CREATE FUNCTION hookgate.insert_apply_jobs(p_endpoint text, p_ids uuid[], p_event_ids jsonb[])
RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  wanted constant text := 'hookgate.apply.' || p_endpoint;
  made integer;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pgboss.queue q WHERE q.name = wanted) THEN
    RAISE EXCEPTION 'queue % does not exist: a gateway or worker creates it when it starts', wanted
      USING ERRCODE = 'P0002';
  END IF;
  INSERT INTO pgboss.job (
    id, name, data, priority, start_after, created_on, singleton_key, singleton_on, group_id, group_tier,
    expire_seconds, deletion_seconds, keep_until, retry_limit, retry_delay, retry_backoff, retry_delay_max,
    policy, dead_letter, heartbeat_seconds, blocked, blocking, pending_dependencies, trace_context
  )
  SELECT j.id, q.name, jsonb_build_object('endpoint', p_endpoint, 'eventIds', j.event_ids), 0,
         pgboss.job_now(), pgboss.job_now(), NULL, NULL, NULL, NULL,
         COALESCE(q.expire_seconds, 900), COALESCE(q.deletion_seconds, 604800),
         pgboss.job_now() + COALESCE(q.retention_seconds, 1209600) * interval '1s',
         COALESCE(q.retry_limit, 2), COALESCE(q.retry_delay, 0), COALESCE(q.retry_backoff, false),
         q.retry_delay_max, q.policy, q.dead_letter, q.heartbeat_seconds, false, false, 0, NULL
    FROM unnest(p_ids, p_event_ids) WITH ORDINALITY AS j(id, event_ids, ord)
    JOIN pgboss.queue q ON q.name = wanted
   ORDER BY j.ord
  ON CONFLICT DO NOTHING;
  GET DIAGNOSTICS made = ROW_COUNT;
  IF made <> cardinality(p_ids) THEN
    RAISE EXCEPTION 'pg-boss created % of % apply job(s) for %', made, cardinality(p_ids), p_endpoint
      USING ERRCODE = 'P0003';
  END IF;
  RETURN made;
END $$;
-- Called only by the definer functions below (as their owner): no role may call it itself.
REVOKE ALL ON FUNCTION hookgate.insert_apply_jobs(text, uuid[], jsonb[]) FROM PUBLIC;

-- `hookgate requeue` and the console's: parked, dead (or, asked, discarded) events of one
-- endpoint back to pending, each batch of p_per_job under a new apply job that names them, with a
-- fresh retry budget counted on from their attempts (services/core/inbox/requeue.ts, dispatch.ts).
-- Rows are locked, so two requeues never move one event twice; a row a concurrent action changed
-- while this waited is looked at again and left if it no longer matches.
CREATE FUNCTION hookgate.requeue_events(
  p_endpoint text, p_statuses text[], p_event_ids text[], p_event_type text,
  p_since timestamptz, p_until timestamptz, p_limit integer, p_per_job integer)
RETURNS TABLE (event_id text, attempts integer)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan AS $$
#variable_conflict use_column
DECLARE
  ids text[];
  tries integer[];
  carried uuid[];
  jobs uuid[];
  groups jsonb[];
BEGIN
  IF p_statuses IS NULL OR cardinality(p_statuses) = 0
     OR NOT p_statuses <@ ARRAY['parked', 'dead', 'discarded'] THEN
    RAISE EXCEPTION 'requeue moves parked, dead or discarded events, not %', p_statuses USING ERRCODE = '22023';
  END IF;
  IF p_limit IS NULL OR p_limit NOT BETWEEN 1 AND 10000 THEN
    RAISE EXCEPTION 'requeue moves 1 to 10000 events per call, not %', p_limit USING ERRCODE = '22023';
  END IF;
  IF p_per_job IS NULL OR p_per_job NOT BETWEEN 1 AND 1000 THEN
    RAISE EXCEPTION 'an apply job carries 1 to 1000 events, not %', p_per_job USING ERRCODE = '22023';
  END IF;
  WITH picked AS (
    SELECT i.endpoint, i.event_id, i.received_at
      FROM hookgate.inbox i
     WHERE i.endpoint = p_endpoint AND i.status = ANY (p_statuses)
       AND (p_event_ids IS NULL OR i.event_id = ANY (p_event_ids))
       AND (p_event_type IS NULL OR i.event_type = p_event_type)
       AND (p_since IS NULL OR i.received_at >= p_since)
       AND (p_until IS NULL OR i.received_at < p_until)
     ORDER BY i.received_at, i.event_id
     LIMIT p_limit
     FOR UPDATE
  ), numbered AS (
    SELECT p.*, (row_number() OVER (ORDER BY p.received_at, p.event_id) - 1) / p_per_job AS grp,
           row_number() OVER (ORDER BY p.received_at, p.event_id) AS ord
      FROM picked p
  ), job AS MATERIALIZED (
    SELECT g.grp, gen_random_uuid() AS id FROM (SELECT DISTINCT grp FROM numbered) g
  ), moved AS (
    UPDATE hookgate.inbox i
       SET status = 'pending', processed_at = NULL,
           discarded_at = NULL, discarded_by = NULL, discard_reason = NULL,
           dispatch_job = j.id, dispatched_attempts = i.attempts, requeued_attempts = i.attempts,
           next_attempt_at = NULL
      FROM numbered n JOIN job j ON j.grp = n.grp
     WHERE i.endpoint = n.endpoint AND i.event_id = n.event_id AND i.received_at = n.received_at
    RETURNING i.event_id, i.attempts, i.dispatch_job, n.ord
  )
  SELECT array_agg(m.event_id ORDER BY m.ord), array_agg(m.attempts ORDER BY m.ord),
         array_agg(m.dispatch_job ORDER BY m.ord)
    INTO ids, tries, carried FROM moved m;
  IF ids IS NULL THEN
    RETURN;
  END IF;
  SELECT array_agg(g.job ORDER BY g.first), array_agg(g.events ORDER BY g.first) INTO jobs, groups
    FROM (SELECT u.job, min(u.ord) AS first, jsonb_agg(u.event_id ORDER BY u.ord) AS events
            FROM unnest(ids, carried) WITH ORDINALITY AS u(event_id, job, ord)
           GROUP BY u.job) g;
  PERFORM hookgate.insert_apply_jobs(p_endpoint, jobs, groups);
  RETURN QUERY SELECT u.event_id, u.attempts FROM unnest(ids, tries) AS u(event_id, attempts);
END $$;

-- `hookgate discard` and the console's: parked or dead events settled for good as discarded, with
-- who, why and when. Locked as requeue's are: each event ends in exactly one of the two actions.
CREATE FUNCTION hookgate.discard_events(
  p_endpoint text, p_statuses text[], p_event_ids text[], p_event_type text,
  p_since timestamptz, p_until timestamptz, p_limit integer, p_actor text, p_reason text)
RETURNS TABLE (event_id text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan AS $$
#variable_conflict use_column
BEGIN
  IF p_statuses IS NULL OR cardinality(p_statuses) = 0 OR NOT p_statuses <@ ARRAY['parked', 'dead'] THEN
    RAISE EXCEPTION 'discard settles parked or dead events, not %', p_statuses USING ERRCODE = '22023';
  END IF;
  IF p_limit IS NULL OR p_limit NOT BETWEEN 1 AND 1000000 THEN
    RAISE EXCEPTION 'discard settles 1 to 1000000 events per call, not %', p_limit USING ERRCODE = '22023';
  END IF;
  IF p_actor IS NULL OR length(p_actor) NOT BETWEEN 1 AND 200
     OR p_reason IS NULL OR length(p_reason) NOT BETWEEN 1 AND 1000 THEN
    RAISE EXCEPTION 'a discard names who (1 to 200 characters) and why (1 to 1000)' USING ERRCODE = '22023';
  END IF;
  RETURN QUERY
  WITH picked AS (
    SELECT i.endpoint, i.event_id, i.received_at
      FROM hookgate.inbox i
     WHERE i.endpoint = p_endpoint AND i.status = ANY (p_statuses)
       AND (p_event_ids IS NULL OR i.event_id = ANY (p_event_ids))
       AND (p_event_type IS NULL OR i.event_type = p_event_type)
       AND (p_since IS NULL OR i.received_at >= p_since)
       AND (p_until IS NULL OR i.received_at < p_until)
     ORDER BY i.received_at, i.event_id
     LIMIT p_limit
     FOR UPDATE
  )
  UPDATE hookgate.inbox i
     SET status = 'discarded', discarded_at = now(), discarded_by = p_actor, discard_reason = p_reason,
         next_attempt_at = NULL
    FROM picked p
   WHERE i.endpoint = p.endpoint AND i.event_id = p.event_id AND i.received_at = p.received_at
  RETURNING i.event_id;
END $$;

-- A form-encoded body (Twilio) as the JSON document the gateway stores for it: each parameter's
-- value, a list where a name repeats (services/core/providers/twilio.ts, formToJson). Decoded as
-- URLSearchParams does: `+` is a space, `%XX` a byte, the bytes UTF-8.
CREATE FUNCTION hookgate.form_params(p_body text) RETURNS jsonb
LANGUAGE sql IMMUTABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
  WITH parts AS (
    SELECT p.ord,
           CASE WHEN strpos(p.part, '=') > 0 THEN left(p.part, strpos(p.part, '=') - 1) ELSE p.part END AS name,
           CASE WHEN strpos(p.part, '=') > 0 THEN substr(p.part, strpos(p.part, '=') + 1) ELSE '' END AS value
      FROM unnest(string_to_array(p_body, '&')) WITH ORDINALITY AS p(part, ord)
     WHERE p.part <> ''
  ), decoded AS (
    SELECT x.ord,
           (SELECT convert_from(coalesce(string_agg(
                     CASE WHEN t.m[1] ~ '^%[0-9A-Fa-f]{2}$' THEN decode(substr(t.m[1], 2), 'hex')
                          ELSE convert_to(t.m[1], 'UTF8') END, ''::bytea ORDER BY t.n), ''::bytea), 'UTF8')
              FROM regexp_matches(replace(x.name, '+', ' '), '%[0-9A-Fa-f]{2}|[^%]+|%', 'g')
                   WITH ORDINALITY AS t(m, n)) AS name,
           (SELECT convert_from(coalesce(string_agg(
                     CASE WHEN t.m[1] ~ '^%[0-9A-Fa-f]{2}$' THEN decode(substr(t.m[1], 2), 'hex')
                          ELSE convert_to(t.m[1], 'UTF8') END, ''::bytea ORDER BY t.n), ''::bytea), 'UTF8')
              FROM regexp_matches(replace(x.value, '+', ' '), '%[0-9A-Fa-f]{2}|[^%]+|%', 'g')
                   WITH ORDINALITY AS t(m, n)) AS value
      FROM parts x
  )
  SELECT coalesce(jsonb_object_agg(g.name, CASE WHEN cardinality(g.vals) = 1 THEN to_jsonb(g.vals[1])
                                               ELSE to_jsonb(g.vals) END), '{}'::jsonb)
    FROM (SELECT d.name, array_agg(d.value ORDER BY d.ord) AS vals FROM decoded d GROUP BY d.name) g
$$;

-- A quarantine release (services/core/quarantine/actions.ts): the held row is locked first, so a
-- release and a drop of the same row never both succeed (the second finds the row settled, and
-- who settled it and when). The identity (id, type, entity, kept headers, whether the id is
-- unsigned) comes from the caller, who ran the endpoint's provider over the held delivery with
-- the current configuration; the payload does not: it is the held body itself, parsed here (as
-- JSON, or with p_form as a form post). The row then goes through the claim's key trigger like any
-- delivery: a duplicate of a key still within the dedupe horizon stores nothing and queues
-- nothing. Only an accepted row gets an apply job; the release counts as a delivery.
CREATE FUNCTION hookgate.release_quarantined(
  p_id bigint, p_provider text, p_event_id text, p_event_type text, p_entity_type text,
  p_entity_id text, p_entity_version bigint, p_headers jsonb, p_digest_body boolean, p_form boolean,
  p_actor text, p_reason text)
RETURNS TABLE (outcome text, endpoint text, settled_at timestamptz, settled_by text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
  held hookgate.quarantine%ROWTYPE;
  body jsonb;
  job uuid := gen_random_uuid();
  is_new boolean;
BEGIN
  IF p_actor IS NULL OR length(p_actor) NOT BETWEEN 1 AND 200 OR length(p_reason) > 1000 THEN
    RAISE EXCEPTION 'a release names who (1 to 200 characters) and at most 1000 characters of why'
      USING ERRCODE = '22023';
  END IF;
  SELECT * INTO held FROM hookgate.quarantine q WHERE q.id = p_id FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'unknown'::text, NULL::text, NULL::timestamptz, NULL::text;
    RETURN;
  END IF;
  IF held.released_at IS NOT NULL OR held.dropped_at IS NOT NULL THEN
    RETURN QUERY SELECT CASE WHEN held.released_at IS NOT NULL THEN 'released' ELSE 'dropped' END,
                        held.endpoint, coalesce(held.released_at, held.dropped_at), held.settled_by;
    RETURN;
  END IF;
  IF p_event_id IS NULL OR length(p_event_id) NOT BETWEEN 1 AND 512 OR p_event_type IS NULL
     OR length(p_event_type) NOT BETWEEN 1 AND 500 THEN
    RAISE EXCEPTION 'an event needs an id (1 to 512 characters) and a type (1 to 500)' USING ERRCODE = '22023';
  END IF;
  body := CASE WHEN p_form THEN hookgate.form_params(convert_from(held.body, 'UTF8'))
               ELSE convert_from(held.body, 'UTF8')::jsonb END;
  -- The event was received when the delivery arrived, not when an operator released it: its
  -- timeline, latency and dedupe horizon count from then (received_via says how it came in).
  INSERT INTO hookgate.inbox AS i
    (endpoint, event_id, provider, event_type, entity_type, entity_id, entity_version, payload, headers,
     body_digest, dispatch_job, received_at, received_via)
  VALUES (held.endpoint, p_event_id, p_provider, p_event_type, p_entity_type, p_entity_id, p_entity_version,
          body, coalesce(p_headers, '{}'::jsonb),
          CASE WHEN p_digest_body THEN sha256(convert_to(body::text, 'UTF8')) END, job,
          held.received_at, 'quarantine_release')
  ON CONFLICT DO NOTHING;
  is_new := FOUND;
  IF is_new THEN
    PERFORM hookgate.insert_apply_jobs(held.endpoint, ARRAY[job], ARRAY[jsonb_build_array(p_event_id)]);
    PERFORM pg_notify('hookgate_apply', held.endpoint);
  END IF;
  INSERT INTO hookgate.delivery_counts AS c (endpoint, minute, shard, accepted, duplicate)
  VALUES (held.endpoint, date_trunc('minute', now()), (pg_backend_pid() % 32767)::smallint,
          CASE WHEN is_new THEN 1 ELSE 0 END, CASE WHEN is_new THEN 0 ELSE 1 END)
  ON CONFLICT (endpoint, minute, shard) DO UPDATE
     SET accepted = c.accepted + EXCLUDED.accepted, duplicate = c.duplicate + EXCLUDED.duplicate;
  UPDATE hookgate.quarantine q SET released_at = now(), settled_by = p_actor, settle_reason = p_reason
   WHERE q.id = p_id;
  RETURN QUERY SELECT CASE WHEN is_new THEN 'accepted' ELSE 'duplicate' END, held.endpoint,
                      now(), p_actor;
END $$;

-- A quarantine drop: each held row among these ids marked dropped, with who and why; the rows
-- are locked in id order (a release holding one is waited for), and each id found comes back
-- with what became of it: `dropped` now, or `released` / `dropped` before (by whom, when).
CREATE FUNCTION hookgate.drop_quarantined(p_ids bigint[], p_actor text, p_reason text)
RETURNS TABLE (id bigint, endpoint text, outcome text, settled_at timestamptz, settled_by text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
BEGIN
  IF p_actor IS NULL OR length(p_actor) NOT BETWEEN 1 AND 200
     OR p_reason IS NULL OR length(p_reason) NOT BETWEEN 1 AND 1000 THEN
    RAISE EXCEPTION 'a drop names who (1 to 200 characters) and why (1 to 1000)' USING ERRCODE = '22023';
  END IF;
  IF cardinality(p_ids) > 10000 THEN
    RAISE EXCEPTION 'a drop names at most 10000 rows, not %', cardinality(p_ids) USING ERRCODE = '22023';
  END IF;
  RETURN QUERY
  WITH locked AS MATERIALIZED (
    SELECT q.id, q.endpoint, q.released_at, q.dropped_at, q.settled_by
      FROM hookgate.quarantine q
     WHERE q.id = ANY (p_ids)
     ORDER BY q.id
     FOR UPDATE
  ), settled AS (
    UPDATE hookgate.quarantine q SET dropped_at = now(), settled_by = p_actor, settle_reason = p_reason
      FROM locked l
     WHERE q.id = l.id AND l.released_at IS NULL AND l.dropped_at IS NULL
    RETURNING q.id
  )
  SELECT l.id, l.endpoint,
         CASE WHEN s.id IS NOT NULL THEN 'dropped_now' WHEN l.released_at IS NOT NULL THEN 'released'
              ELSE 'dropped' END,
         CASE WHEN s.id IS NOT NULL THEN now() ELSE coalesce(l.released_at, l.dropped_at) END,
         CASE WHEN s.id IS NOT NULL THEN p_actor ELSE l.settled_by END
    FROM locked l LEFT JOIN settled s ON s.id = l.id
   ORDER BY l.id;
END $$;

REVOKE ALL ON FUNCTION hookgate.requeue_events(text, text[], text[], text, timestamptz, timestamptz, integer, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION hookgate.discard_events(text, text[], text[], text, timestamptz, timestamptz, integer, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION hookgate.release_quarantined(bigint, text, text, text, text, text, bigint, jsonb, boolean, boolean, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION hookgate.drop_quarantined(bigint[], text, text) FROM PUBLIC;

-- A quarantine release of an endpoint with payload search: release_quarantined, then its row
-- marked for the payload index as the claim marks one. A name of its own, not an overload: every
-- function the code names is one to_regproc finds.
CREATE FUNCTION hookgate.release_quarantined_searchable(
  p_id bigint, p_provider text, p_event_id text, p_event_type text, p_entity_type text,
  p_entity_id text, p_entity_version bigint, p_headers jsonb, p_digest_body boolean, p_form boolean,
  p_actor text, p_reason text, p_payload_search boolean)
RETURNS TABLE (outcome text, endpoint text, settled_at timestamptz, settled_by text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
  r record;
BEGIN
  FOR r IN
    SELECT * FROM hookgate.release_quarantined(p_id, p_provider, p_event_id, p_event_type, p_entity_type,
                                               p_entity_id, p_entity_version, p_headers, p_digest_body,
                                               p_form, p_actor, p_reason)
  LOOP
    IF r.outcome = 'accepted' AND p_payload_search THEN
      UPDATE hookgate.inbox i SET payload_search = true
       WHERE i.endpoint = r.endpoint AND i.event_id = p_event_id AND i.payload_search IS NULL;
    END IF;
    RETURN QUERY SELECT r.outcome, r.endpoint, r.settled_at, r.settled_by;
  END LOOP;
END $$;
REVOKE ALL ON FUNCTION hookgate.release_quarantined_searchable(bigint, text, text, text, text, text, bigint, jsonb, boolean, boolean, text, text, boolean) FROM PUBLIC;

