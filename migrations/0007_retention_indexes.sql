-- Retention deletes what it deletes, not the table: `hookgate prune` walks settled delivery
-- records oldest first through this index (as it walks the inbox through inbox_received_at_idx),
-- instead of reading the whole table on every batch. Settled rows only, the ones it deletes.
CREATE INDEX outbox_deliveries_settled_idx ON hookgate.outbox_deliveries (settled_at)
  WHERE status IN ('delivered', 'nowhere');
