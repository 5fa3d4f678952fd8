-- What each event costs on disk (docs/storage.md, "Bytes per event"): the console's payload
-- search index only for the endpoints that ask for it, and the body digest kept once, in the keys.

-- 1. The payload index, per endpoint. The GIN index over every payload (what the console's
--    payload containment search reads) was the largest thing an event stored beyond its payload,
--    larger than the rest of its row. An endpoint asks for it with `payloadSearch: true`; the
--    claim then marks its rows, and only marked rows are indexed. Rows of other endpoints cost
--    nothing in it: the console searches their payloads among the newest rows it reads
--    (console.scanRows), as it applies any filter no index answers. Null, not false, for the
--    others: a null costs a bit in the row's null bitmap, a false a byte and its alignment.
ALTER TABLE hookgate.inbox ADD COLUMN payload_search boolean;

DROP INDEX hookgate.inbox_payload_path_idx;
CREATE INDEX inbox_payload_path_idx ON hookgate.inbox USING gin (payload jsonb_path_ops)
  WHERE payload_search;

-- 2. The body digest is stored once: the claim's key trigger copies it into inbox_keys (where it
--    is unique per endpoint, what deduplicates) and leaves the inbox row's null. Nothing reads the
--    inbox's column: the keys are what every duplicate check reads (presence.ts), and they outlive
--    the row. Rows stored before this migration keep theirs until they are pruned.
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

-- 3. A quarantine release of an endpoint with payload search marks its row as the claim does. The
--    release itself is 0024's function, unchanged (the previous release's console calls it, and
--    its rows are then left out of the index); this one adds the endpoint's setting. A name of its
--    own, not an overload: every function the code names is one to_regproc finds.
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
