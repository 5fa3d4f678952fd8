-- The management API (/api/v1, served by the console: docs/api.md). Two small tables, each written
-- only by its module in services/core/api/.
--
-- An action's answer by Idempotency-Key, per access token: a retried POST with the same key gets
-- the first answer back instead of acting again. A row is claimed (status NULL, locked_until set)
-- before the action runs and completed with its answer after; a claim whose console died with it
-- can be taken over once locked_until has passed. Rows live console.api.idempotencyTtl (24h by
-- default) and are deleted by the console after that, oldest first through
-- api_idempotency_created_idx; the per-token rate limit bounds how many one token can make.
CREATE TABLE IF NOT EXISTS hookgate.api_idempotency (
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

CREATE INDEX IF NOT EXISTS api_idempotency_created_idx ON hookgate.api_idempotency (created_at);

-- When each access token was last used (the API's and the CLI's token lists), written at most once
-- a minute per token by the console that saw the request. One row per configured token name: the
-- console deletes the rows of names its configuration no longer has.
CREATE TABLE IF NOT EXISTS hookgate.api_token_use (
  token text PRIMARY KEY CHECK (length(token) BETWEEN 1 AND 200),
  last_used_at timestamptz NOT NULL,
  -- The client's address as the console saw it (console.trustedProxyHops applies).
  last_source text CHECK (length(last_source) <= 100)
);
