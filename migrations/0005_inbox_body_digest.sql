-- Where a provider signs only the body and the event id travels in an unsigned header (GitHub,
-- Shopify, hmac with eventIdHeader), a captured body re-sent under a new id header verifies.
-- The gateway then also stores the SHA-256 of the signed body, and this index makes a second
-- copy of the same body on the same endpoint a duplicate, whatever id it claims. Other providers
-- sign their id (or timestamp it), so their rows leave the column null and the index skips them.
ALTER TABLE hookgate.inbox ADD COLUMN body_digest bytea;

CREATE UNIQUE INDEX inbox_body_digest_key ON hookgate.inbox (endpoint, body_digest)
  WHERE body_digest IS NOT NULL;
