-- Why a destination was paused, shown beside who and since when (as an endpoint's pause is).
ALTER TABLE hookgate.destination_state
  ADD COLUMN IF NOT EXISTS reason text CHECK (length(reason) <= 1000);
