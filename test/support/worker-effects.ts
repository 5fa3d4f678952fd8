import type pg from 'pg';

/** The advisory lock key a test holds to stall an apply inside its business write. */
export const STALL_LOCK = 4242;

/**
 * Test-only instrumentation installed into a test database, never into hookgate's schema files:
 * every committed write to hookgate.entity_state (the `project` handler's business write) appends
 * one row to public.effects, so "one effect" is a count. The same trigger can stall (waiting on
 * advisory lock STALL_LOCK while the test holds it) or fail, per event, through two control
 * tables, or fail for every write made by a connection whose application_name is 'test-failing'.
 */
export const INSTALL_EFFECTS = `
  CREATE TABLE public.effects (
    seq       bigserial PRIMARY KEY,
    endpoint  text NOT NULL,
    event_id  text NOT NULL,
    entity_id text NOT NULL,
    version   bigint NOT NULL,
    at        timestamptz NOT NULL DEFAULT clock_timestamp()
  );
  CREATE TABLE public.stall_control (event_id text PRIMARY KEY);
  CREATE TABLE public.fail_control (event_id text PRIMARY KEY);
  CREATE FUNCTION public.record_effect() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF EXISTS (SELECT 1 FROM public.stall_control WHERE event_id = NEW.event_id) THEN
      PERFORM pg_advisory_xact_lock(${STALL_LOCK});
    END IF;
    IF current_setting('application_name') = 'test-failing'
       OR EXISTS (SELECT 1 FROM public.fail_control WHERE event_id = NEW.event_id) THEN
      RAISE EXCEPTION 'injected failure for %', NEW.event_id;
    END IF;
    INSERT INTO public.effects (endpoint, event_id, entity_id, version)
    VALUES (NEW.endpoint, NEW.event_id, NEW.entity_id, NEW.version);
    RETURN NEW;
  END $$;
  CREATE TRIGGER record_effect AFTER INSERT OR UPDATE ON hookgate.entity_state
    FOR EACH ROW EXECUTE FUNCTION public.record_effect();`;

export async function installEffects(db: pg.Pool): Promise<void> {
  await db.query(INSTALL_EFFECTS);
}

export async function effectCounts(db: pg.Pool, endpoint?: string): Promise<Map<string, number>> {
  const result = await db.query<{ event_id: string; n: number }>(
    `SELECT event_id, count(*)::int AS n FROM public.effects WHERE $1::text IS NULL OR endpoint = $1 GROUP BY event_id`,
    [endpoint ?? null],
  );
  return new Map(result.rows.map((row) => [row.event_id, row.n]));
}

/**
 * Backends of `db`'s database currently waiting for STALL_LOCK (i.e. stalled inside a business
 * write). pg_locks and pg_stat_activity are cluster-wide and test files run in parallel on one
 * PostgreSQL, each in its own database, so this must not see another file's stalls.
 */
export async function stalledBackends(db: pg.Pool): Promise<{ pid: number; application_name: string }[]> {
  const result = await db.query<{ pid: number; application_name: string }>(
    `SELECT a.pid, a.application_name
       FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND NOT l.granted AND l.objid = $1
        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND a.datname = current_database()`,
    [STALL_LOCK],
  );
  return result.rows;
}

/** Backends of `db`'s database waiting for a row lock (e.g. a second apply of the same event). */
export async function rowLockWaiters(db: pg.Pool, applicationName: string): Promise<number> {
  const result = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND application_name = $1 AND wait_event_type = 'Lock'`,
    [applicationName],
  );
  return result.rows[0]?.n ?? 0;
}
