-- Quarantine (issue 23, DESIGN.md promise 8): a delivery whose signature verified but that cannot
-- become an inbox event (version_invalid, payload_unstorable, event_id_invalid,
-- event_type_missing) is kept here and acknowledged, never applied until an operator releases it.
-- Written only by services/core/quarantine/.
--
-- Bounded: one row per distinct body per endpoint (`body_digest`, SHA-256 of the raw body, is
-- unique per endpoint, so a provider's retries of the same body are stored once), and each body is
-- at most the endpoint's body limit (the gateway reads no more). Unverified deliveries never get
-- here (promise 2).
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
