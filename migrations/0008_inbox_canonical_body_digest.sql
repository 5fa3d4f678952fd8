-- The body digest (0005) was the SHA-256 of the bytes the gateway received, and `hookgate replay`
-- stored none: it gets an event back from the provider's API as parsed JSON, whose bytes never
-- match the delivery's. So a captured GitHub delivery posted under a made-up X-GitHub-Delivery
-- id, before or after an operator's replay of the same event, was a second event. The claim now
-- digests the stored payload's jsonb text on both paths (services/core/inbox/claim-sql.ts,
-- bodyDigestOf; the expression below must stay the same). This rewrites the digests already
-- stored the same way, and gives one to replayed rows of providers whose id header is unsigned
-- (GitHub is the only such provider `hookgate replay` reads).
--
-- Rows that now share a digest on an endpoint (the same JSON received as different bytes, or once
-- by the gateway and once by a replay) were stored as separate events before this migration and
-- stay so; only the earliest received keeps the digest, so the unique index can be built and
-- later copies of that body are still duplicates of it. The index is rebuilt rather than updated
-- in place: one UPDATE may pass through transient collisions between rows it has not reached yet.
DROP INDEX hookgate.inbox_body_digest_key;

UPDATE hookgate.inbox
   SET body_digest = sha256(convert_to((payload)::text, 'UTF8'))
 WHERE body_digest IS NOT NULL
    OR (received_via = 'api_replay' AND provider = 'github');

UPDATE hookgate.inbox i
   SET body_digest = NULL
  FROM (SELECT endpoint, event_id,
               row_number() OVER (PARTITION BY endpoint, body_digest ORDER BY received_at, event_id) AS copy
          FROM hookgate.inbox
         WHERE body_digest IS NOT NULL) d
 WHERE d.copy > 1 AND i.endpoint = d.endpoint AND i.event_id = d.event_id;

CREATE UNIQUE INDEX inbox_body_digest_key ON hookgate.inbox (endpoint, body_digest)
  WHERE body_digest IS NOT NULL;
