-- A destination breaker may also open on a failure rate (docs/destinations.md): the attempts and
-- failures counted in its current window, which starts at the window's first attempt. Existing
-- rows start with an empty window.
ALTER TABLE hookgate.destination_breaker
  ADD COLUMN IF NOT EXISTS rate_since    timestamptz,
  ADD COLUMN IF NOT EXISTS rate_attempts integer NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS rate_failures integer NOT NULL DEFAULT 0;
