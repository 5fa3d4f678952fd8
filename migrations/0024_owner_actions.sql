-- The database's half of three promises the console's role and retention could break
-- (docs/console.md "Database role", docs/storage.md "Dedupe horizon"):
--
-- 1. No session setting switches deduplication off. Migration 0021's insert trigger let a row in
--    without claiming its key when the session said `hookgate.inbox_moving = 'on'` (or named the
--    key in `hookgate.inbox_moving_key`): any role that may insert into the inbox could set those
--    and store a second row for an event already applied. A row is now let in over its own key
--    only when a function owned by this migration's owner is moving it, which it records in
--    hookgate.inbox_moves, a table no hookgate role may write.
-- 2. Keys outlive payloads. Deleting an inbox row no longer takes its key: keys live until their
--    own retention (the dedupe horizon, `hookgate prune`, services/core/inbox/partitions.ts), so a
--    replay or a redelivery of an event whose row was pruned is still a duplicate.
-- 3. The console's writes go through functions. Its role could insert any pg-boss job and any
--    inbox row, and set any inbox row's status; its requeue, discard and quarantine release and
--    drop now run as these SECURITY DEFINER functions (owner: this migration's, search_path
--    pinned, EXECUTE only for hookgate_runtime and hookgate_console, services/core/db/roles.ts),
--    which write only apply jobs of hookgate's queues for inbox rows that exist.

-- ---------------------------------------------------------------------------------------------
-- 1. Row movement the key trigger can recognise

-- A move in progress, in the transaction that makes it: the key of one row an UPDATE of
-- received_at is moving to another partition, or (endpoint null) every row inbox_drop_partition's
-- one INSERT re-inserts. Written and deleted only by the functions below; read by the claim's key
-- trigger, which runs as the claimer (SELECT is granted; nothing else is).
CREATE TABLE hookgate.inbox_moves (
  xact     xid8 NOT NULL,
  endpoint text,
  event_id text
);

-- Grants at once, as 0021 did for the keys: an earlier release's gateways claim while migrate
-- runs, and its grants (roles.ts) only come at the end of the run.
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'hookgate_runtime') THEN
    GRANT SELECT ON hookgate.inbox_moves TO hookgate_runtime;
  END IF;
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'hookgate_console') THEN
    GRANT SELECT ON hookgate.inbox_moves TO hookgate_console;
  END IF;
END $$;

-- Consumes this transaction's record of the move of one key, and says whether the row being
-- inserted is the moved row itself: the move's delete half has already taken the row from its
-- old partition (the current statement's earlier work is visible here), so a row of that key
-- still in the inbox means the insert is a second row.
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
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'hookgate_runtime') THEN
    GRANT EXECUTE ON FUNCTION hookgate.inbox_take_move(text, text) TO hookgate_runtime;
  END IF;
END $$;

-- The claim's key trigger (runs as the claimer, see 0021). A row whose key (or body digest) is
-- taken is not inserted, unless the owner's functions are moving that very row.
CREATE OR REPLACE FUNCTION hookgate.inbox_claim_key() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  mine xid8;
  whole boolean;
BEGIN
  INSERT INTO hookgate.inbox_keys (endpoint, event_id, body_digest, received_at)
  VALUES (NEW.endpoint, NEW.event_id, NEW.body_digest, NEW.received_at)
  ON CONFLICT DO NOTHING;
  IF FOUND THEN
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

-- An UPDATE that changes received_at (nothing in hookgate does; tests and operators age rows so)
-- moves the row to the partition of its new time as a delete and an insert: the key's time
-- follows the row (its horizon is counted from it), and the move is recorded for the insert
-- trigger above. An update that keeps the row in its partition leaves its record unused: records
-- of transactions that have ended are cleared here.
CREATE OR REPLACE FUNCTION hookgate.inbox_move_key() RETURNS trigger
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

-- ---------------------------------------------------------------------------------------------
-- 2. Keys outlive their rows

-- A deleted row keeps its key: keys go with their own retention (the dedupe horizon). The
-- trigger is dropped; the function stays, doing nothing, for an inbox converted by an earlier
-- release's migrate code that still creates the trigger.
CREATE OR REPLACE FUNCTION hookgate.inbox_forget_key() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  RETURN OLD;
END $$;
DROP TRIGGER IF EXISTS inbox_forget_key ON hookgate.inbox;

-- Where the keys' retention has reached: keys of events received before this are gone (or were,
-- before this migration, deleted with their rows), so a replay or a reconciliation reaching
-- further back would claim those events again. One row; written by `hookgate prune`.
CREATE TABLE hookgate.inbox_keys_floor (
  singleton     boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
  pruned_before timestamptz NOT NULL
);
-- Until this migration, pruning a row deleted its key: on a database pruned before, the keys
-- left start at the oldest row kept.
INSERT INTO hookgate.inbox_keys_floor (pruned_before)
SELECT min(k.received_at) FROM hookgate.inbox_keys k
HAVING min(k.received_at) IS NOT NULL
   AND EXISTS (SELECT 1 FROM hookgate.audit WHERE command = 'prune' AND NOT dry_run);

-- ---------------------------------------------------------------------------------------------
-- Retention of one partition (0021's, whose return type gains `dropped`): the rows it keeps are
-- re-inserted under a record of this transaction in inbox_moves (no session setting), and the
-- settled rows that go with the table are counted (before the inbox's lock is taken: the count
-- reads the partition, which no claim writes any more, since its whole range is past).
DROP FUNCTION hookgate.inbox_drop_partition(text, timestamptz, integer);
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
REVOKE ALL ON FUNCTION hookgate.inbox_drop_partition(text, timestamptz, integer) FROM PUBLIC;
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'hookgate_runtime') THEN
    GRANT EXECUTE ON FUNCTION hookgate.inbox_drop_partition(text, timestamptz, integer) TO hookgate_runtime;
  END IF;
END $$;

-- ---------------------------------------------------------------------------------------------
-- 3. The operators' writes (requeue, discard, quarantine release and drop)

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
