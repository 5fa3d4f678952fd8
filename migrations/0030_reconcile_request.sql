-- An operator's reconciliation run now (the API's reconcile start, services/core/reconcile/
-- schedule.ts): one job in pg-boss's `hookgate.reconcile` queue, through this function, so the
-- console's role, which may not write pg-boss's tables, can queue exactly this and nothing else.
-- The queue's `stately` policy keeps at most one run waiting per endpoint: null when one waits.
CREATE FUNCTION hookgate.request_reconcile_run(p_endpoint text, p_actor text, p_since timestamptz)
RETURNS uuid
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  made uuid;
BEGIN
  IF p_endpoint IS NULL OR p_endpoint !~ '^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$' THEN
    RAISE EXCEPTION 'an endpoint name is 1 to 63 letters, digits, _ or -, not %', p_endpoint
      USING ERRCODE = '22023';
  END IF;
  IF p_actor IS NULL OR length(p_actor) NOT BETWEEN 1 AND 200 THEN
    RAISE EXCEPTION 'a run names who asked for it (1 to 200 characters)' USING ERRCODE = '22023';
  END IF;
  INSERT INTO pgboss.job (
    id, name, data, priority, start_after, created_on, singleton_key, singleton_on, group_id, group_tier,
    expire_seconds, deletion_seconds, keep_until, retry_limit, retry_delay, retry_backoff, retry_delay_max,
    policy, dead_letter, heartbeat_seconds, blocked, blocking, pending_dependencies, trace_context
  )
  SELECT gen_random_uuid(), q.name,
         jsonb_build_object('endpoint', p_endpoint, 'actor', p_actor)
           || CASE WHEN p_since IS NULL THEN '{}'::jsonb
                   ELSE jsonb_build_object('since', to_char(p_since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) END,
         0, pgboss.job_now(), pgboss.job_now(), p_endpoint, NULL, NULL, NULL,
         COALESCE(q.expire_seconds, 900), COALESCE(q.deletion_seconds, 604800),
         pgboss.job_now() + COALESCE(q.retention_seconds, 1209600) * interval '1s',
         COALESCE(q.retry_limit, 0), COALESCE(q.retry_delay, 0), COALESCE(q.retry_backoff, false),
         q.retry_delay_max, q.policy, q.dead_letter, q.heartbeat_seconds, false, false, 0, NULL
    FROM pgboss.queue q
   WHERE q.name = 'hookgate.reconcile'
  ON CONFLICT DO NOTHING
  RETURNING id INTO made;
  IF NOT FOUND AND NOT EXISTS (SELECT 1 FROM pgboss.queue q WHERE q.name = 'hookgate.reconcile') THEN
    RAISE EXCEPTION 'queue hookgate.reconcile does not exist: a worker creates it when it starts'
      USING ERRCODE = 'P0002';
  END IF;
  RETURN made;
END $$;
REVOKE ALL ON FUNCTION hookgate.request_reconcile_run(text, text, timestamptz) FROM PUBLIC;
