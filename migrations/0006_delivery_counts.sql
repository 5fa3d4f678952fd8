-- Deliveries per endpoint and minute, written by the gateway's claim (one upsert per claim
-- batch), so `hookgate stats` can give the duplicate rate from the database alone. A duplicate
-- costs an increment here, never a row of its own.
--
-- `shard` spreads concurrent claim transactions over several rows of the same minute: each
-- claim connection writes the shard of its backend pid, so transactions on different
-- connections rarely wait for each other's row lock until COMMIT. Readers sum the shards.
CREATE TABLE hookgate.delivery_counts (
  endpoint   text        NOT NULL,
  minute     timestamptz NOT NULL,
  shard      smallint    NOT NULL,
  accepted   bigint      NOT NULL DEFAULT 0 CHECK (accepted >= 0),
  duplicate  bigint      NOT NULL DEFAULT 0 CHECK (duplicate >= 0),
  PRIMARY KEY (endpoint, minute, shard)
);

-- How a row arrived when not as a signed delivery from its provider: 'replay_token' (re-posted
-- with the endpoint's replay token) or 'api_replay' (pulled from the provider's API by
-- `hookgate replay`). NULL for ordinary deliveries; adding a nullable column rewrites nothing.
ALTER TABLE hookgate.inbox ADD COLUMN received_via text;
