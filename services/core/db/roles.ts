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
 *
 * Both are group roles (NOLOGIN): the logins the pods and KEDA use are made members of them
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
    -- pg-boss stamps its supervision and maintenance times on its version row: those columns
    -- (whichever this pg-boss has), never the version itself.
    FOR stamp IN SELECT attname FROM pg_attribute
                  WHERE attrelid = 'pgboss.version'::regclass AND attnum > 0 AND NOT attisdropped
                    AND attname <> 'version' LOOP
      EXECUTE format('GRANT UPDATE (%I) ON pgboss.version TO hookgate_runtime', stamp);
    END LOOP;
    GRANT USAGE ON SCHEMA hookgate, pgboss TO hookgate_readonly;
    GRANT SELECT ON ALL TABLES IN SCHEMA hookgate, pgboss TO hookgate_readonly;
  END $$`;

/** Creates the roles when asked to (`migrate --create-roles`), then grants if they exist. */
export async function applyRoles(client: pg.ClientBase, create: boolean): Promise<boolean> {
  if (create) await client.query(CREATE_ROLES);
  const exist = (await client.query<{ exist: boolean }>(ROLES_EXIST)).rows[0]?.exist === true;
  if (exist) await client.query(GRANT_ROLES);
  return exist;
}
