import { describe, expect, it } from 'vitest';
import { jobsNaming } from '../support/apply.ts';
import { runCliInProcess } from '../support/cli.ts';
import { runHookgate } from '../support/process.ts';
import { effectCounts } from '../support/worker-effects.ts';
import { unfinishedJobs, waitFor } from '../support/worker-harness.ts';
import { useWorkerStack } from '../support/worker-stack.ts';

// A dead event, once its fault is fixed, is applied exactly once even when two requeues run at
// the same moment while a worker is running; --dry-run changes nothing.

const endpoints = { ops: { handler: 'project' } };

const stack = useWorkerStack({ endpoints, worker: { retryLimit: 0 }, effects: true, workers: 1 });

const statusOf = async (eventId: string) =>
  (
    await stack.db.pool.query<{ status: string }>(`SELECT status FROM hookgate.inbox WHERE event_id = $1`, [
      eventId,
    ])
  ).rows[0]?.status;

describe('hookgate requeue', () => {
  it('applies a fixed dead event exactly once with two concurrent requeues and a worker running', async () => {
    await stack.db.pool.query(`INSERT INTO public.fail_control (event_id) VALUES ('evt_dead')`);
    await stack.claimer.claim('ops', [
      { eventId: 'evt_dead', entityType: 'thing', entityId: 't1', version: 1 },
      { eventId: 'evt_ok', entityType: 'thing', entityId: 't2', version: 1 },
    ]);
    await waitFor('evt_dead to be dead', async () => (await statusOf('evt_dead')) === 'dead', 60_000);
    await waitFor('evt_ok to be processed', async () => (await statusOf('evt_ok')) === 'processed');
    expect((await effectCounts(stack.db.pool)).get('evt_dead')).toBeUndefined();
    const env = { DATABASE_URL: stack.db.url, LOG_LEVEL: 'warn' };
    const show = async () => {
      const run = await runCliInProcess(
        ['events', 'show', 'evt_dead', '--endpoint', 'ops', '--json', '--config', stack.configFile],
        env,
      );
      expect(run.code, run.output).toBe(0);
      return JSON.parse(run.stdout).timeline as { at: string | null; what: string }[];
    };
    // Dead: its timeline says when it was received, when its attempt ran and when it ended, why.
    const dead = await show();
    expect(dead.map((entry) => entry.what)).toEqual([
      'received',
      expect.stringMatching(
        /^attempt 1 by \S+:\d+: dead, sqlstate_P0001: injected failure for evt_dead.* \(\d+ ms\)$/,
      ),
      expect.stringMatching(
        /^ended dead after 1 attempt\(s\): sqlstate_P0001: injected failure for evt_dead/,
      ),
    ]);
    for (const entry of dead) expect(entry.at, entry.what).toMatch(/^\d{4}-\d\d-\d\dT/);

    // --dry-run lists the event and changes nothing.
    const dry = await runHookgate(
      [
        'requeue',
        '--endpoint',
        'ops',
        '--status',
        'dead',
        '--dry-run',
        '--json',
        '--config',
        stack.configFile,
      ],
      { env },
    );
    expect(dry.code, dry.output).toBe(0);
    const preview = JSON.parse(dry.output.slice(dry.output.indexOf('{')));
    expect(preview).toMatchObject({ dry_run: true, would_requeue: 1 });
    expect(preview.events.map((e: { event_id: string }) => e.event_id)).toEqual(['evt_dead']);
    expect(await statusOf('evt_dead')).toBe('dead');

    // The fault is fixed; two operators requeue at the same moment.
    await stack.db.pool.query(`DELETE FROM public.fail_control`);
    const args = ['requeue', '--endpoint', 'ops', '--status', 'dead', '--json', '--config', stack.configFile];
    const [a, b] = await Promise.all([
      runHookgate(args, { env: { ...env, HOOKGATE_ACTOR: 'alice' } }),
      runHookgate(args, { env: { ...env, HOOKGATE_ACTOR: 'bob' } }),
    ]);
    const codes = [a.code, b.code].sort();
    // One moved it; the other found nothing left to move (exit 2, "nothing changed").
    expect(codes, `${a.output}\n---\n${b.output}`).toEqual([0, 2]);
    const loser = a.code === 2 ? a : b;
    expect(loser.output).toMatch(/nothing_changed/);
    await waitFor('evt_dead to be processed', async () => (await statusOf('evt_dead')) === 'processed');
    // Requeued, then applied: every change with its time, in order.
    // Both requeues are audited; the one that moved the event names it, and its timeline says who.
    const audited = await stack.db.pool.query<{ actor: string; count: string; event_ids: string[] }>(
      `SELECT actor, count, event_ids FROM hookgate.audit WHERE command = 'requeue' AND NOT dry_run ORDER BY count DESC`,
    );
    const mover = a.code === 0 ? 'alice' : 'bob';
    expect(audited.rows).toEqual([
      { actor: mover, count: '1', event_ids: ['evt_dead'] },
      { actor: mover === 'alice' ? 'bob' : 'alice', count: '0', event_ids: [] },
    ]);
    const shown = await show();
    // The audit row is written after the requeue commits: a worker may start the attempt first.
    expect(shown.map((entry) => entry.what)).toEqual([
      'received',
      expect.stringMatching(/^attempt 1 by \S+: dead, /),
      `requeued by ${mover} after 1 attempt(s), with a fresh job`,
      expect.stringMatching(/^attempt 2 by \S+: processed \(\d+ ms\)$/),
      'settled processed after 2 attempt(s)',
    ]);
    const requeued = shown;
    const times = requeued.map((entry) => Date.parse(entry.at!));
    expect(times.every((time) => Number.isFinite(time))).toBe(true);
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    expect(times[2]!).toBeGreaterThan(Date.parse(dead[2]!.at!));
    const human = await runCliInProcess(
      ['events', 'show', 'evt_dead', '--endpoint', 'ops', '--config', stack.configFile],
      env,
    );
    expect(human.stdout).toMatch(
      /timeline\n {2}\S+Z +received\n {2}\S+Z +attempt 1 by \S+: dead, .*\n {2}\S+Z +requeued by \S+ after 1 attempt\(s\)/,
    );

    // Nothing left to requeue: a dry run says so with exit 2, as a real run does.
    const nothing = await runCliInProcess(
      ['requeue', '--endpoint', 'ops', '--status', 'dead', '--dry-run', '--config', stack.configFile],
      env,
    );
    expect(nothing.code, nothing.output).toBe(2);
    expect(nothing.stdout).toMatch(/Would requeue 0 event\(s\) of ops/);
    expect(nothing.stderr).toMatch(
      /nothing_changed: No dead event of ops matches; nothing would be requeued/,
    );
    // A sentinel through the same queue: once it is applied and nothing is left to run, a second
    // job for evt_dead, had one been created, would have run.
    await stack.claimer.claim('ops', [
      { eventId: 'evt_sentinel', entityType: 'thing', entityId: 't3', version: 1 },
    ]);
    await waitFor('the sentinel applied', async () => (await statusOf('evt_sentinel')) === 'processed');
    await waitFor('nothing left to run', async () => (await unfinishedJobs(stack.db.pool, 'ops')) === 0);
    const effects = await effectCounts(stack.db.pool);
    expect(effects.get('evt_dead')).toBe(1);
    expect(effects.get('evt_ok')).toBe(1);

    // An explicit id that is not dead/parked is reported, exit 2.
    const missing = await runHookgate(
      ['requeue', '--endpoint', 'ops', '--event-id', 'does-not-exist', '--config', stack.configFile],
      { env },
    );
    expect(missing.code).toBe(2);
    expect(missing.output).toMatch(/nothing_changed: None of does-not-exist/);
  }, 120_000);

  it('--orphans --dry-run lists the pending events with no job and gives them none; without --dry-run they get one', async () => {
    const env = { DATABASE_URL: stack.db.url, LOG_LEVEL: 'warn' };
    // A pending row whose job is gone (as retention or an operator's mistake leaves one).
    await stack.db.pool.query(
      `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, entity_type, entity_id, entity_version, payload)
       VALUES ('ops', 'evt_orphan', 'standard-webhooks', 'thing.updated', 'thing', 't9', 1, '{}')`,
    );
    const dry = await runCliInProcess(
      ['requeue', '--endpoint', 'ops', '--orphans', '--dry-run', '--json', '--config', stack.configFile],
      env,
    );
    expect(dry.code, dry.output).toBe(0);
    expect(JSON.parse(dry.stdout)).toEqual({
      endpoint: 'ops',
      dry_run: true,
      would_requeue: 1,
      event_ids: ['evt_orphan'],
      would_end: [],
    });
    // The dry run has returned: a job it had made would be committed and named here already.
    expect(await statusOf('evt_orphan')).toBe('pending');
    expect(await jobsNaming(stack.db.pool, ['evt_orphan'])).toBe(0);

    const real = await runCliInProcess(
      ['requeue', '--endpoint', 'ops', '--orphans', '--config', stack.configFile],
      env,
    );
    expect(real.code, real.output).toBe(0);
    await waitFor('the orphan to be applied', async () => (await statusOf('evt_orphan')) === 'processed');
  }, 60_000);
});
