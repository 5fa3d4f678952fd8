import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../support/cli.ts';
import { effectCounts } from '../support/worker-effects.ts';
import { waitFor } from '../support/worker-harness.ts';
import { useWorkerStack } from '../support/worker-stack.ts';

// `hookgate pause` with two worker processes: the paused endpoint's events are accepted and stay
// pending (no attempt counted) while another endpoint's are applied, also by a worker restarted
// during the pause; after `hookgate resume` every event is applied exactly once.

const endpoints = { held: { handler: 'project' }, free: { handler: 'project' } };

const stack = useWorkerStack({ endpoints, effects: true, workers: 2 });

const env = (actor: string) => ({ DATABASE_URL: stack.db.url, LOG_LEVEL: 'warn', HOOKGATE_ACTOR: actor });
const events = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => ({
    eventId: `${prefix}_${i}`,
    entityType: 'thing',
    entityId: `${prefix}_${i % 5}`,
    version: i + 1,
  }));
const rowsOf = async (endpoint: string) =>
  (
    await stack.db.pool.query<{ event_id: string; status: string; attempts: number }>(
      `SELECT event_id, status, attempts FROM hookgate.inbox WHERE endpoint = $1 ORDER BY event_id`,
      [endpoint],
    )
  ).rows;
const allProcessed = async (endpoint: string, n: number) => {
  const rows = await rowsOf(endpoint);
  return rows.length === n && rows.every((row) => row.status === 'processed');
};

describe('hookgate pause / resume with worker processes', () => {
  it('holds the paused endpoint across a worker restart and applies everything once on resume', async () => {
    // The workers are up: an event of each endpoint is applied.
    await stack.claimer.claim('held', events('warm', 1));
    await stack.claimer.claim('free', events('free0', 1));
    await waitFor(
      'warm-up applied',
      async () => (await allProcessed('held', 1)) && (await allProcessed('free', 1)),
      60_000,
    );

    const paused = await runCliInProcess(
      ['pause', '--endpoint', 'held', '--reason', 'deploying the handler fix', '--config', stack.configFile],
      env('alice'),
    );
    expect(paused.code, paused.output).toBe(0);
    expect(paused.stdout).toMatch(/Paused held/);
    const again = await runCliInProcess(
      ['pause', '--endpoint', 'held', '--config', stack.configFile],
      env('bob'),
    );
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(
      /nothing_changed: held is already paused since \S+ by alice \(deploying the handler fix\)/,
    );

    await stack.claimer.claim('held', events('a', 20));
    await stack.claimer.claim('free', events('free1', 10));
    // The other endpoint's events are applied while the paused one's stay pending.
    await waitFor('free applied', async () => allProcessed('free', 11), 60_000);

    // One worker is restarted during the pause; the restarted one honours it too.
    await stack.kill(stack.workers[0]!);
    const restarted = stack.spawnWorker({ env: { LOG_LEVEL: 'info' } });
    await waitFor(
      'the restarted worker to run',
      async () => restarted.output().includes('worker started'),
      60_000,
    );
    await stack.claimer.claim('held', events('b', 10));
    await stack.claimer.claim('free', events('free2', 10));
    await waitFor('free applied again', async () => allProcessed('free', 21), 60_000);

    const held = (await rowsOf('held')).filter((row) => !row.event_id.startsWith('warm'));
    expect(held).toHaveLength(30);
    for (const row of held) expect(row, row.event_id).toMatchObject({ status: 'pending', attempts: 0 });
    expect([...(await effectCounts(stack.db.pool, 'held')).keys()]).toEqual(['warm_0']);

    // stats shows the pause.
    const stats = await runCliInProcess(['stats', '--json', '--config', stack.configFile], env('alice'));
    const byName = new Map(
      (
        JSON.parse(stats.stdout).endpoints as {
          endpoint: string;
          paused: boolean;
          paused_by: string | null;
          pending: number;
        }[]
      ).map((entry) => [entry.endpoint, entry]),
    );
    expect(byName.get('held')).toMatchObject({ paused: true, paused_by: 'alice', pending: 30 });
    expect(byName.get('free')).toMatchObject({ paused: false });

    const resumed = await runCliInProcess(
      ['resume', '--endpoint', 'held', '--config', stack.configFile],
      env('carol'),
    );
    expect(resumed.code, resumed.output).toBe(0);
    expect(resumed.stdout).toMatch(/Resumed held \(paused since \S+ by alice/);
    await waitFor('held applied after resume', async () => allProcessed('held', 31), 120_000).catch(
      async (error: Error) => {
        // What was left, to tell a stuck resume from a slow machine.
        const left = await stack.db.pool.query(
          `SELECT event_id, status, attempts, dispatch_job, next_attempt_at FROM hookgate.inbox
            WHERE endpoint = 'held' AND status <> 'processed'`,
        );
        const jobs = await stack.db.pool.query(
          `SELECT name, state::text, count(*)::int FROM pgboss.job GROUP BY 1, 2`,
        );
        throw new Error(`${error.message}: ${JSON.stringify(left.rows)} ${JSON.stringify(jobs.rows)}`);
      },
    );
    // Each applied once, at its first attempt.
    const effects = await effectCounts(stack.db.pool, 'held');
    expect(effects.size).toBe(31);
    for (const [id, n] of effects) expect(n, id).toBe(1);
    for (const row of await rowsOf('held')) expect(row.attempts, row.event_id).toBe(1);

    const audit = await runCliInProcess(['audit', '--endpoint', 'held', '--json'], env('carol'));
    expect(
      (JSON.parse(audit.stdout) as { actor: string; command: string; count: number }[]).map(
        (row) => `${row.actor} ${row.command} ${row.count}`,
      ),
    ).toEqual(['carol resume 1', 'bob pause 0', 'alice pause 1']);
  }, 180_000);
});
