-- `hookgate stats` sums the per-minute delivery counts of a window across every endpoint, and
-- `hookgate prune` deletes them oldest first: both read by minute, which the primary key
-- (endpoint, minute, shard) cannot serve without an endpoint. Without this index both read the
-- whole table (30 days of minutes × endpoints × claiming connections); with it, the window only.
CREATE INDEX delivery_counts_minute_idx ON hookgate.delivery_counts (minute);
