-- hookgate: no transaction
-- The console's event search (services/console/read-models/events-sql.ts) answers each kind of
-- question through an index, whatever the inbox holds:
-- - payload containment (`payload @> '{"data":{"object":{"customer":"cus_…"}}}'`): a GIN index
--   with jsonb_path_ops, which serves exactly @> (a smaller, faster index than the default
--   jsonb_ops, which also serves key-exists operators the console does not use);
-- - one entity's events, newest first: entity_id then received_at, only rows that have an entity.
-- Event ids use the primary key, unsettled statuses their partial indexes, time inbox_received_at_idx.
-- Built CONCURRENTLY, outside a transaction (first line): on an inbox of millions of rows the GIN
-- build takes minutes, during which a plain CREATE INDEX would hold every claim (every delivery
-- answered 503) while the upgrade's migration Job runs. A build that stops halfway leaves an
-- invalid index, which the next `hookgate migrate` drops and builds again.
CREATE INDEX CONCURRENTLY IF NOT EXISTS inbox_payload_path_idx ON hookgate.inbox USING gin (payload jsonb_path_ops);
CREATE INDEX CONCURRENTLY IF NOT EXISTS inbox_entity_idx ON hookgate.inbox (entity_id, received_at) WHERE entity_id IS NOT NULL;
