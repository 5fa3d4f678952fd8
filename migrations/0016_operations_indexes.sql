-- hookgate: no transaction
-- Discarded events by endpoint and age, for `requeue --status discarded` and `stats`, without
-- reading the endpoint's whole history. Built CONCURRENTLY (outside a transaction, first line), as
-- 0012's indexes are: on a large inbox a plain CREATE INDEX would hold every claim.
CREATE INDEX CONCURRENTLY IF NOT EXISTS inbox_discarded_idx ON hookgate.inbox (endpoint, received_at)
  WHERE status = 'discarded';
