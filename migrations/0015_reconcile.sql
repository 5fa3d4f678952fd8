-- Continuous reconciliation (services/core/reconcile/): one row per endpoint that reconciles
-- against its provider's API. The watermark says "every event the provider listed between
-- covered_since and watermark is in the inbox"; it only moves forward, over windows whose every
-- page was listed and claimed, and never in a failed run. The lease makes one run per endpoint
-- at a time, whoever starts it (a worker's scheduled job or `hookgate reconcile`): a run takes it
-- when it is free or expired, renews it while it runs, and every write of a run is fenced by it.
-- The last run's figures and the running totals feed `hookgate reconcile status` and the
-- hookgate_reconcile_* metrics. Its SQL lives in services/core/reconcile/state-sql.ts.
CREATE TABLE hookgate.reconcile_state (
  endpoint text PRIMARY KEY,
  covered_since timestamptz,
  watermark timestamptz,
  lease_owner uuid,
  lease_until timestamptz,
  last_run_started_at timestamptz,
  last_run_finished_at timestamptz,
  -- complete | budget | failed | lease_lost | stopped
  last_outcome text,
  last_error text,
  last_success_at timestamptz,
  last_listed integer NOT NULL DEFAULT 0,
  last_present integer NOT NULL DEFAULT 0,
  last_filled integer NOT NULL DEFAULT 0,
  last_unusable integer NOT NULL DEFAULT 0,
  last_delivery_failures integer NOT NULL DEFAULT 0,
  last_api_calls integer NOT NULL DEFAULT 0,
  last_duration_ms integer NOT NULL DEFAULT 0,
  -- Running totals since the row was made: events found missing (and filled), runs.
  missing_total bigint NOT NULL DEFAULT 0,
  runs_total bigint NOT NULL DEFAULT 0,
  CHECK (watermark IS NULL OR covered_since <= watermark)
);
