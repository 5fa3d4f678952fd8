-- The inbox row is each event's truth; a pg-boss job only carries a batch of rows to a worker
-- (docs/design-notes.md, "Dispatch: one job per claim batch").
--
-- dispatched_attempts: the attempts an event had made when its current job was sent (0 at its
-- claim; its attempts so far at every dispatch after: a failed attempt sent again with a
-- backoff, a requeue, a sweep). An attempt's number is dispatched_attempts plus the job's retry
-- count plus one, so a job pg-boss tries again after a lost worker counts on. requeued_attempts
-- keeps its meaning: the attempts made before the latest requeue (or observe-mode redispatch),
-- from which the event's budget of attempts starts again.
ALTER TABLE hookgate.inbox
  ADD COLUMN dispatched_attempts integer NOT NULL DEFAULT 0 CHECK (dispatched_attempts >= 0);
-- Rows still waiting on a job of the earlier shape count their attempts as that job did.
UPDATE hookgate.inbox SET dispatched_attempts = requeued_attempts WHERE status = 'pending' AND requeued_attempts > 0;

-- The job that carries the event now. Only that job applies it: a job it was taken from (a row
-- sent again after a failure, a requeue, a sweep) skips it. Null for rows claimed before this
-- migration (their job id is the one derived from the event) and for sync-mode rows (applied in
-- their claim's own transaction).
ALTER TABLE hookgate.inbox ADD COLUMN dispatch_job uuid;

-- When its next attempt may start (its job's start_after), for people and for the sweeper.
ALTER TABLE hookgate.inbox ADD COLUMN next_attempt_at timestamptz;

-- Set, and committed, right before an event is applied on its own after a lost attempt; cleared
-- when that apply ends. Still set afterwards only if the worker died during it: the event may be
-- what kills workers, and is applied after its neighbours. (Was a marker text in last_error.)
ALTER TABLE hookgate.inbox ADD COLUMN lone_apply_at timestamptz;
UPDATE hookgate.inbox SET last_error = NULL, lone_apply_at = now()
 WHERE status = 'pending' AND last_error LIKE 'worker_lost: the worker process ended while applying this event on its own%';
