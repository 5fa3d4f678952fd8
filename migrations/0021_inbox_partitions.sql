-- The inbox partitioned by received_at (docs/storage.md, "The partitioned inbox"), so that
-- retention drops a day's partition instead of deleting its rows one by one.
--
-- A unique index on a partitioned table must contain the partition key, so (endpoint, event_id)
-- can no longer be the inbox's primary key: deduplication moves to hookgate.inbox_keys, one thin
-- row per event, kept by a trigger on every insert into the inbox (whoever writes it: the claim,
-- a quarantine release, an earlier hookgate's claim still running during an upgrade).
--
-- This migration only prepares: it creates the keys table, its triggers and the functions that
-- create and drop partitions. `hookgate migrate` then converts a populated inbox online, in
-- steps that hold no lock for long (services/core/inbox/partitions.ts): keys backfilled in
-- batches while a trigger mirrors new rows, the by-key index built CONCURRENTLY, the boundary
-- constraint validated without blocking writes, then one short transaction that puts today's
-- table under a partitioned parent as its first partition.

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

-- The claim's key trigger (inbox_claim_key) runs as the claimer: the roles that claim may write
-- keys from the moment the inbox is converted, before migrate's grants at the end of its run
-- (services/core/db/roles.ts gives the same when the roles are made later).
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'hookgate_runtime') THEN
    GRANT SELECT, INSERT, UPDATE, DELETE ON hookgate.inbox_keys TO hookgate_runtime;
  END IF;
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'hookgate_console') THEN
    GRANT INSERT ON hookgate.inbox_keys TO hookgate_console;
  END IF;
END $$;

-- The inbox's range partitions, as the functions below made them. from_at is null for the table
-- the inbox was before the conversion (everything received before its to_at).
CREATE TABLE hookgate.inbox_partitions (
  name       text        PRIMARY KEY,
  from_at    timestamptz,
  to_at      timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  CHECK (from_at IS NULL OR from_at < to_at)
);

-- The rarely called key triggers below write hookgate.inbox_keys as this migration's owner
-- (SECURITY DEFINER): whoever inserts into the inbox needs no grant for them. The gateways of the release before this one
-- go on claiming, as hookgate_runtime, while `hookgate migrate` converts the inbox, and the grants
-- on the tables made here only come at the end of that run (roles.ts): until then every claim
-- would fail on the keys table. A trigger function cannot be called other than as a trigger.
--
-- Before the conversion: the unpartitioned inbox's own primary key and body-digest index still
-- decide what is a duplicate; this trigger records the key of each row they let in. A key that
-- is there already belongs to a row deleted since it was recorded (the row just inserted passed
-- both unique indexes), so it is replaced.
CREATE FUNCTION hookgate.inbox_mirror_key() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  INSERT INTO hookgate.inbox_keys (endpoint, event_id, body_digest, received_at)
  VALUES (NEW.endpoint, NEW.event_id, NEW.body_digest, NEW.received_at)
  ON CONFLICT DO NOTHING;
  IF NOT FOUND THEN
    DELETE FROM hookgate.inbox_keys
     WHERE endpoint = NEW.endpoint
       AND (event_id = NEW.event_id OR (NEW.body_digest IS NOT NULL AND body_digest = NEW.body_digest));
    INSERT INTO hookgate.inbox_keys (endpoint, event_id, body_digest, received_at)
    VALUES (NEW.endpoint, NEW.event_id, NEW.body_digest, NEW.received_at);
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER inbox_mirror_key AFTER INSERT ON hookgate.inbox
  FOR EACH ROW EXECUTE FUNCTION hookgate.inbox_mirror_key();

-- After the conversion: the key decides. A row whose key (or body digest) is taken is not
-- inserted, exactly as ON CONFLICT DO NOTHING did on the primary key: the statement's RETURNING
-- leaves it out, so the claim answers it as a duplicate. ON CONFLICT DO NOTHING on the key waits
-- for a concurrent insert of the same key to commit or roll back, so a duplicate is still only
-- acknowledged once the original is durable. The one writer that re-inserts rows whose keys it
-- keeps is inbox_drop_partition below, moving rows it must not lose (it says so in a setting
-- local to its transaction).
--
-- Unlike the other key triggers, this one runs as whoever inserts (every claim calls it, once a
-- row, and a SECURITY DEFINER function's switch of user and settings is paid on each call): the
-- roles that insert into the inbox are granted INSERT on the keys below, at once if they exist.
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

-- A row deleted (retention of rows no day partition holds, or an operator's DELETE) takes its key
-- with it, as deleting the row ended its deduplication before the inbox was partitioned. Not the
-- row an UPDATE of received_at is moving (the delete half of that move). Dropping a partition
-- deletes no rows one by one and fires nothing: the keys of its rows go with prune's keys pass.
CREATE FUNCTION hookgate.inbox_forget_key() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF current_setting('hookgate.inbox_moving_key', true) IS DISTINCT FROM OLD.endpoint || E'\x1f' || OLD.event_id THEN
    DELETE FROM hookgate.inbox_keys WHERE endpoint = OLD.endpoint AND event_id = OLD.event_id;
  END IF;
  RETURN OLD;
END $$;

-- TRUNCATE of the inbox (an operator's or a test's: no hookgate role may) forgets every event,
-- as it did when the keys were the inbox's own primary key. A partition truncated alone does not
-- fire this; its keys are pruned once that partition's days are past the window.
CREATE FUNCTION hookgate.inbox_truncate_keys() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE hookgate.inbox_keys;
  RETURN NULL;
END $$;

-- One lock for whoever changes the set of partitions (migrate, prune, workers), so two never
-- race to create the same day.
CREATE FUNCTION hookgate.inbox_partitions_lock() RETURNS void
LANGUAGE sql AS $$ SELECT pg_advisory_xact_lock(7311540201) $$;

-- Creates the day partitions missing between the last one and p_until, p_days wide each, named
-- after their first day (inbox_p20261202, UTC). Run by the migration's owner on behalf of the
-- runtime role (SECURITY DEFINER: creating tables is DDL, which the runtime may not do). A
-- partition is created apart and then attached, which takes only a SHARE UPDATE EXCLUSIVE lock
-- on the inbox (claims and applies go on); the attach reads the default partition (rows no day
-- partition covers: normally only held rows of dropped days, a few) for rows of the new range.
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
  IF (SELECT relkind FROM pg_class WHERE oid = 'hookgate.inbox'::regclass) <> 'p' THEN
    RETURN 0;
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

REVOKE ALL ON FUNCTION hookgate.inbox_create_partitions(timestamptz, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION hookgate.inbox_drop_partition(text, timestamptz, integer) FROM PUBLIC;
