-- Destinations are the only way out of hookgate (docs/destinations.md): the outbox relay, its
-- pg-boss queues and its record of what it delivered are gone. `handler: forward` endpoints are
-- a destination of a `record` endpoint now, and billing's notifications a destination its
-- handler routes to; both keep their deliveries in hookgate.destination_deliveries.
DROP TABLE IF EXISTS hookgate.outbox_deliveries;

-- The relay's queues (hookgate.outbox.forward, hookgate.outbox.notify and their `.dead`
-- queues) and whatever jobs wait in them: nothing consumes or creates them any more, and a job
-- there (its URL, its body) is never read. Removed here with their jobs, as pg-boss's own
-- deleteQueue would (they live in its common partition). Skipped on a database whose pg-boss
-- schema is not made yet (a new install: `hookgate migrate` installs pg-boss's after these).
DO $$
BEGIN
  IF to_regclass('pgboss.queue') IS NOT NULL AND to_regclass('pgboss.job') IS NOT NULL THEN
    DELETE FROM pgboss.job WHERE name LIKE 'hookgate.outbox.%';
    DELETE FROM pgboss.queue WHERE name LIKE 'hookgate.outbox.%';
  END IF;
END $$;
