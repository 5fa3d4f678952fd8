-- Quarantine bounded (issue 23): retention for released and dropped rows, a cap on held rows per
-- endpoint, and a gauge of held rows per endpoint and reason. Written only by
-- services/core/quarantine/.
--
-- Retention (`hookgate prune --quarantine-older-than`, default 7d) walks settled rows oldest first
-- by the time they were released or dropped; the partial index holds only those rows.
CREATE INDEX IF NOT EXISTS quarantine_settled_idx
  ON hookgate.quarantine ((coalesce(released_at, dropped_at)))
  WHERE released_at IS NOT NULL OR dropped_at IS NOT NULL;

-- The held-rows gauge and the cap's count read held rows per endpoint and reason from this
-- partial index only: its size is the held rows (at most quarantine.maxHeldPerEndpoint per
-- endpoint), never the table's.
CREATE INDEX IF NOT EXISTS quarantine_held_reason_idx
  ON hookgate.quarantine (endpoint, reason)
  WHERE released_at IS NULL AND dropped_at IS NULL;

-- Found by the plan audit (test/integration/plan-audit.test.ts) once it grew these tables: the
-- paused endpoints (the pause gauges, stats, the workers' pause watch) and the breakers not closed
-- (the destination gauges) were read by a scan of the whole table. Both are the few rows in an
-- unusual state, so partial indexes on exactly those rows.
CREATE INDEX IF NOT EXISTS endpoint_state_paused_idx
  ON hookgate.endpoint_state (endpoint) WHERE paused_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS destination_breaker_unclosed_idx
  ON hookgate.destination_breaker (endpoint, destination) WHERE state <> 'closed';
