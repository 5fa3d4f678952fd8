import type pg from 'pg';

/**
 * hookgate's three kinds of database use, as PostgreSQL roles:
 *
 * - migrations: whoever runs `hookgate migrate` (the chart's migration Job). It creates and owns
 *   the schemas `hookgate`, `pgboss` and `billing` and everything in them; only an owner may
 *   ALTER or DROP.
 * - runtime (`hookgate_runtime`): the gateways and workers. Reads and writes rows of those
 *   schemas' tables and nothing else: no CREATE on any schema (PostgreSQL 15 and later no longer
 *   let every role create in `public`), no TRUNCATE, and no writes to the migration ledgers.
 * - read-only (`hookgate_readonly`): KEDA's backlog query, `helm test`'s wait, the console's
 *   reads. SELECT on `hookgate` and `pgboss`.
 * - console (`hookgate_console`, docs/console.md): the web console. SELECT on `hookgate` and
 *   `pgboss`, and exactly the writes its actions make: the audit row (not its time); requeue,
 *   discard and a quarantine release and drop through the baseline migration's SECURITY DEFINER
 *   functions only (no write of its own on the inbox, its keys, the delivery counts or any pg-boss
 *   job); a held quarantine row's reason and message; pause and resume; a destination's pause
 *   state, and its deliveries' status and retry budget (pause, resume, redeliver); the management
 *   API's own two tables (idempotency keys, tokens' last use). No DDL, no TRUNCATE, no DELETE
 *   anywhere but those two.
 *
 * All are group roles (NOLOGIN): the logins the pods and KEDA use are made members of them
 * (docs/kubernetes.md), so passwords stay with whoever manages logins.
 */
/** Concurrent migrators may race to create a role: the loser finds it made. */
export const CREATE_ROLES = `
  DO $$
  BEGIN
    BEGIN
      CREATE ROLE hookgate_runtime NOLOGIN;
    EXCEPTION WHEN duplicate_object THEN NULL;
    END;
    BEGIN
      CREATE ROLE hookgate_readonly NOLOGIN;
    EXCEPTION WHEN duplicate_object THEN NULL;
    END;
    BEGIN
      CREATE ROLE hookgate_console NOLOGIN;
    EXCEPTION WHEN duplicate_object THEN NULL;
    END;
  END $$`;

const ROLES_EXIST = `
  SELECT count(*) = 2 AS exist FROM pg_roles WHERE rolname IN ('hookgate_runtime', 'hookgate_readonly')`;

/**
 * The grants, on everything that exists now: run after every migration (tables a migration or
 * a pg-boss upgrade adds are granted at once) whenever the roles exist. Idempotent.
 */
export const GRANT_ROLES = `
  DO $$
  DECLARE
    stamp name;
  BEGIN
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO hookgate_runtime, hookgate_readonly', current_database());
    GRANT USAGE ON SCHEMA hookgate, pgboss, billing TO hookgate_runtime;
    GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA hookgate, pgboss, billing TO hookgate_runtime;
    GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA hookgate, pgboss, billing TO hookgate_runtime;
    -- What says which schema this is belongs to the migrations alone.
    REVOKE INSERT, UPDATE, DELETE ON hookgate.schema_migrations, pgboss.version FROM hookgate_runtime;
    -- The inbox's partitions are made and dropped only through these (the baseline migration's
    -- SECURITY DEFINER functions): DDL on hookgate's behalf, nothing else.
    REVOKE INSERT, UPDATE, DELETE ON hookgate.inbox_partitions FROM hookgate_runtime;
    GRANT EXECUTE ON FUNCTION hookgate.inbox_create_partitions(timestamptz, integer),
                              hookgate.inbox_drop_partition(text, timestamptz, integer) TO hookgate_runtime;
    -- pg-boss stamps its supervision and maintenance times on its version row: those columns
    -- (whichever this pg-boss has), never the version itself.
    FOR stamp IN SELECT attname FROM pg_attribute
                  WHERE attrelid = 'pgboss.version'::regclass AND attnum > 0 AND NOT attisdropped
                    AND attname <> 'version' LOOP
      EXECUTE format('GRANT UPDATE (%I) ON pgboss.version TO hookgate_runtime', stamp);
    END LOOP;
    -- Moves of inbox rows are recorded only by the baseline's definer functions (the key trigger
    -- reads them, as the claimer, through inbox_take_move).
    REVOKE INSERT, UPDATE, DELETE ON hookgate.inbox_moves FROM hookgate_runtime;
    GRANT EXECUTE ON FUNCTION hookgate.inbox_take_move(text, text) TO hookgate_runtime;
    -- The operators' writes the console shares with the CLI: the CLI, as the runtime role, goes
    -- through the same functions; and the reconcile start's.
    GRANT EXECUTE ON FUNCTION
      hookgate.requeue_events(text, text[], text[], text, timestamptz, timestamptz, integer, integer),
      hookgate.discard_events(text, text[], text[], text, timestamptz, timestamptz, integer, text, text),
      hookgate.release_quarantined(bigint, text, text, text, text, text, bigint, jsonb, boolean, boolean, text, text),
      hookgate.drop_quarantined(bigint[], text, text),
      hookgate.request_reconcile_run(text, text, timestamptz)
      TO hookgate_runtime;
    -- The release that marks a payload-searchable endpoint's row.
    GRANT EXECUTE ON FUNCTION hookgate.release_quarantined_searchable(bigint, text, text, text, text, text, bigint, jsonb, boolean, boolean, text, text, boolean) TO hookgate_runtime;
    GRANT USAGE ON SCHEMA hookgate, pgboss TO hookgate_readonly;
    GRANT SELECT ON ALL TABLES IN SCHEMA hookgate, pgboss TO hookgate_readonly;
    -- Roles made by hand may be the other two only: the console then runs as a runtime login.
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'hookgate_console') THEN
      EXECUTE format('GRANT CONNECT ON DATABASE %I TO hookgate_console', current_database());
      GRANT USAGE ON SCHEMA hookgate, pgboss TO hookgate_console;
      -- Whatever the role holds goes first (a grant made by hand, or by a build that granted more):
      -- what follows is all the console may write.
      REVOKE ALL ON ALL TABLES IN SCHEMA hookgate, pgboss FROM hookgate_console;
      GRANT SELECT ON ALL TABLES IN SCHEMA hookgate, pgboss TO hookgate_console;
      GRANT USAGE ON ALL SEQUENCES IN SCHEMA hookgate TO hookgate_console;
      -- Every action records itself; its time is the database's.
      GRANT INSERT (actor, command, endpoint, filters, count, dry_run, reason, event_ids)
        ON hookgate.audit TO hookgate_console;
      -- Requeue (services/core/inbox/requeue.ts), discard (discard.ts), quarantine release and drop
      -- (quarantine/actions.ts): each locks its rows and writes only what its action writes (for
      -- requeue and release, only apply jobs of hookgate's queues for inbox rows that exist).
      GRANT EXECUTE ON FUNCTION
        hookgate.requeue_events(text, text[], text[], text, timestamptz, timestamptz, integer, integer),
        hookgate.discard_events(text, text[], text[], text, timestamptz, timestamptz, integer, text, text),
        hookgate.release_quarantined(bigint, text, text, text, text, text, bigint, jsonb, boolean, boolean, text, text),
        hookgate.drop_quarantined(bigint[], text, text)
        TO hookgate_console;
      -- The API's reconcile start: one run of the reconcile queue, for the workers.
      GRANT EXECUTE ON FUNCTION hookgate.request_reconcile_run(text, text, timestamptz) TO hookgate_console;
      GRANT EXECUTE ON FUNCTION hookgate.release_quarantined_searchable(bigint, text, text, text, text, text, bigint, jsonb, boolean, boolean, text, text, boolean) TO hookgate_console;
      -- A release that cannot claim a held row yet says why on the row (actions.ts).
      GRANT UPDATE (reason, message) ON hookgate.quarantine TO hookgate_console;
      -- Pause and resume (services/core/pause/pause.ts).
      GRANT INSERT, UPDATE ON hookgate.endpoint_state TO hookgate_console;
      -- A destination's pause and resume (destinations/state.ts: its state row; deliveries.ts:
      -- held or released) and redeliver (deliveries.ts: status, retry budget, due time).
      GRANT INSERT, UPDATE ON hookgate.destination_state TO hookgate_console;
      GRANT UPDATE (status, redelivered_attempts, next_attempt_at, settled_at)
        ON hookgate.destination_deliveries TO hookgate_console;
      -- The management API (services/core/api/): an action's answer by Idempotency-Key (claimed,
      -- completed, deleted when it expires) and each token's last use.
      GRANT INSERT, UPDATE, DELETE ON hookgate.api_idempotency, hookgate.api_token_use TO hookgate_console;
      -- Every pg-boss client registers, refreshes and removes its own instance row.
      IF to_regclass('pgboss.instance') IS NOT NULL THEN
        GRANT INSERT, UPDATE, DELETE ON pgboss.instance TO hookgate_console;
      END IF;
    END IF;
  END $$`;

/** Creates the roles when asked to (`migrate --create-roles`), then grants if they exist. */
export async function applyRoles(client: pg.ClientBase, create: boolean): Promise<boolean> {
  if (create) await client.query(CREATE_ROLES);
  const exist = (await client.query<{ exist: boolean }>(ROLES_EXIST)).rows[0]?.exist === true;
  if (exist) await client.query(GRANT_ROLES);
  return exist;
}
