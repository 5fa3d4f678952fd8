-- What the worker needs: the versioned projection the `project` handler writes, and the inbox's
-- memory of attempts made before an operator requeue.

-- Attempts counted before the latest `hookgate requeue`. A requeue gives the event a fresh job
-- (and so a fresh retry budget); the worker records attempts as
-- requeued_attempts + (the job's retry count + 1), so `attempts` keeps counting across requeues.
ALTER TABLE hookgate.inbox
  ADD COLUMN requeued_attempts integer NOT NULL DEFAULT 0 CHECK (requeued_attempts >= 0);

-- Latest state per entity with the version it came from. Writes carry
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
