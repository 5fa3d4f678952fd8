-- Operations, part two (issue 23): the operators' audit trail.
--
-- hookgate.audit: one row per operator action (requeue, discard, pause, resume, replay, prune,
-- and redeliver once destinations land), dry runs included, written by services/core/audit/.
-- `event_ids` keeps at most the first 1000 events an action touched (`count` says how many in
-- all), so one row stays small whatever the action moved; its GIN index serves `events show`'s
-- "which actions touched this event". A few hundred bytes per action; `hookgate prune` deletes
-- rows older than `--audit-older-than` (default 365d) through audit_at_idx.
CREATE TABLE hookgate.audit (
  id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at         timestamptz NOT NULL DEFAULT now(),
  actor      text        NOT NULL CHECK (length(actor) BETWEEN 1 AND 200),
  command    text        NOT NULL CHECK (length(command) BETWEEN 1 AND 63),
  endpoint   text,
  filters    jsonb       NOT NULL DEFAULT '{}'::jsonb,
  count      bigint      NOT NULL CHECK (count >= 0),
  dry_run    boolean     NOT NULL,
  reason     text        CHECK (length(reason) <= 1000),
  event_ids  text[]      NOT NULL DEFAULT '{}' CHECK (cardinality(event_ids) <= 1000)
);
CREATE INDEX audit_at_idx ON hookgate.audit (at);
CREATE INDEX audit_endpoint_at_idx ON hookgate.audit (endpoint, at) WHERE endpoint IS NOT NULL;
CREATE INDEX audit_event_ids_idx ON hookgate.audit USING gin (event_ids);

-- Discard (`hookgate discard`): a parked or dead event an operator settles for good, with who, why
-- and when on its row (and in hookgate.audit). `discarded` is final and kept: prune never deletes
-- it, requeue moves it only when asked (`--status discarded`). The CHECK is replaced NOT VALID and
-- validated apart: adding it takes a moment's lock, validating it reads the inbox without
-- blocking claims (SHARE UPDATE EXCLUSIVE).
ALTER TABLE hookgate.inbox DROP CONSTRAINT inbox_status_check;
ALTER TABLE hookgate.inbox ADD CONSTRAINT inbox_status_check
  CHECK (status IN ('pending', 'processed', 'ignored', 'stale', 'parked', 'dead', 'discarded')) NOT VALID;
ALTER TABLE hookgate.inbox VALIDATE CONSTRAINT inbox_status_check;
ALTER TABLE hookgate.inbox ADD COLUMN discarded_at timestamptz;
ALTER TABLE hookgate.inbox ADD COLUMN discarded_by text;
ALTER TABLE hookgate.inbox ADD COLUMN discard_reason text;

-- Pause (`hookgate pause` / `resume`): an endpoint's processing held by an operator. One row per
-- endpoint ever paused, written by services/core/pause/pause.ts; `paused_at` set means paused.
-- Workers read it (cached for a second) before fetching an endpoint's jobs, and apply
-- transactions hold a shared advisory lock that `pause` takes exclusively, so once `pause` has
-- returned no apply of the endpoint commits. The gateway never reads it: deliveries are still
-- verified, claimed and acknowledged.
CREATE TABLE hookgate.endpoint_state (
  endpoint      text        PRIMARY KEY,
  paused_at     timestamptz,
  paused_by     text,
  pause_reason  text        CHECK (length(pause_reason) <= 1000),
  updated_at    timestamptz NOT NULL DEFAULT now()
);

-- Per-attempt history: one row per apply attempt of an event (when it started, which worker, how
-- it ended, its error, how long its batch took), written by the apply engine in the attempt's own
-- transaction (services/core/attempts/attempts.ts) and read by `events show`. Bounded: deleted by
-- `hookgate prune` with the inbox window (oldest first, through apply_attempts_at_idx), whatever
-- the event's status; an event's attempts are bounded by its retry budget per requeue.
CREATE TABLE hookgate.apply_attempts (
  id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  endpoint       text        NOT NULL,
  event_id       text        NOT NULL,
  attempt        integer     NOT NULL CHECK (attempt >= 1),
  at             timestamptz NOT NULL DEFAULT now(),
  worker         text        NOT NULL,
  outcome        text        NOT NULL,
  error_code     text,
  error_message  text        CHECK (length(error_message) <= 2000),
  duration_ms    double precision NOT NULL CHECK (duration_ms >= 0)
);
CREATE INDEX apply_attempts_event_idx ON hookgate.apply_attempts (endpoint, event_id, at);
CREATE INDEX apply_attempts_at_idx ON hookgate.apply_attempts (at);
