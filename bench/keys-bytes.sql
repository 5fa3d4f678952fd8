-- What the dedupe horizon costs on disk (docs/storage.md, "Dedupe horizon"): hookgate.inbox_keys
-- as the baseline migration makes it (primary key, the body digest's partial unique index,
-- received_at's index), filled with generate_series to :n keys received evenly over 35 days, in time order as a
-- claim writes them, then vacuumed; bytes per key for the table and each index. Two shapes:
-- Stripe-like (a signed 28-character id, no digest) and GitHub-like (an unsigned 36-character
-- delivery GUID, with its 32-byte body digest). Run it in a throwaway database:
--
--   createdb keysbytes && psql -X -v n=10000000 -d keysbytes -f bench/keys-bytes.sql
\set ON_ERROR_STOP on
\timing on
DROP TABLE IF EXISTS keys_signed, keys_unsigned;
CREATE TABLE keys_signed (
  endpoint    text        NOT NULL,
  event_id    text        NOT NULL,
  body_digest bytea,
  received_at timestamptz NOT NULL,
  PRIMARY KEY (endpoint, event_id)
);
CREATE UNIQUE INDEX keys_signed_body_digest_key ON keys_signed (endpoint, body_digest) WHERE body_digest IS NOT NULL;
CREATE INDEX keys_signed_received_at_idx ON keys_signed (received_at);
CREATE TABLE keys_unsigned (LIKE keys_signed);
ALTER TABLE keys_unsigned ADD PRIMARY KEY (endpoint, event_id);
CREATE UNIQUE INDEX keys_unsigned_body_digest_key ON keys_unsigned (endpoint, body_digest) WHERE body_digest IS NOT NULL;
CREATE INDEX keys_unsigned_received_at_idx ON keys_unsigned (received_at);

INSERT INTO keys_signed (endpoint, event_id, body_digest, received_at)
SELECT 'stripe', 'evt_' || left(md5(g::text || 'k'), 24), NULL,
       now() - interval '35 days' + (g * (interval '35 days' / :n))
  FROM generate_series(1, :n) g;
INSERT INTO keys_unsigned (endpoint, event_id, body_digest, received_at)
SELECT 'github', md5(g::text || 'g')::uuid::text, sha256(g::text::bytea),
       now() - interval '35 days' + (g * (interval '35 days' / :n))
  FROM generate_series(1, :n) g;
VACUUM ANALYZE keys_signed;
VACUUM ANALYZE keys_unsigned;

SELECT c.relname,
       round(pg_relation_size(c.oid)::numeric / :n, 1) AS heap_bytes_per_key,
       (SELECT string_agg(i.indexrelid::regclass::text || ' ' ||
                          round(pg_relation_size(i.indexrelid)::numeric / :n, 1), ', ' ORDER BY i.indexrelid::regclass::text)
          FROM pg_index i WHERE i.indrelid = c.oid) AS index_bytes_per_key,
       round(pg_total_relation_size(c.oid)::numeric / :n, 1) AS total_bytes_per_key,
       pg_size_pretty(pg_total_relation_size(c.oid)) AS total
  FROM pg_class c WHERE c.relname IN ('keys_signed', 'keys_unsigned') ORDER BY c.relname;
SELECT 'keys_signed' AS relname, round(avg(pg_column_size(t.*)), 1) AS avg_row_bytes FROM (SELECT * FROM keys_signed TABLESAMPLE SYSTEM (1)) t
UNION ALL
SELECT 'keys_unsigned', round(avg(pg_column_size(t.*)), 1) FROM (SELECT * FROM keys_unsigned TABLESAMPLE SYSTEM (1)) t;
