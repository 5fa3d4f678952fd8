-- The console's event search (services/console/read-models/events-sql.ts) answers each kind of
-- question through an index, whatever the inbox holds:
-- - payload containment (`payload @> '{"data":{"object":{"customer":"cus_…"}}}'`): a GIN index
--   with jsonb_path_ops, which serves exactly @> (a smaller, faster index than the default
--   jsonb_ops, which also serves key-exists operators the console does not use);
-- - one entity's events, newest first: entity_id then received_at, only rows that have an entity.
-- Event ids use the primary key, unsettled statuses their partial indexes, time inbox_received_at_idx.
CREATE INDEX inbox_payload_path_idx ON hookgate.inbox USING gin (payload jsonb_path_ops);
CREATE INDEX inbox_entity_idx ON hookgate.inbox (entity_id, received_at) WHERE entity_id IS NOT NULL;
