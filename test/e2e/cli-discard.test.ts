import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../support/cli.ts';
import { runHookgate } from '../support/process.ts';
import { effectCounts } from '../support/worker-effects.ts';
import { waitFor } from '../support/worker-harness.ts';
import { useWorkerStack } from '../support/worker-stack.ts';

// `hookgate discard` with a worker process running: dead events dismissed with who, why and when,
// left alone by requeue unless asked, out of the backlog; a discard and a requeue of the same
// events at the same moment leave each event in exactly one state, and both are audited.

const endpoints = { ops: { handler: 'project' } };

const stack = useWorkerStack({ endpoints, worker: { retryLimit: 0 }, effects: true, workers: 1 });
const IDS = ['d0', 'd1', 'd2', 'd3', 'd4', 'd5'];

const envOf = (actor: string) => ({ DATABASE_URL: stack.db.url, LOG_LEVEL: 'warn', HOOKGATE_ACTOR: actor });
const statuses = async (ids: readonly string[]) =>
  new Map(
    (
      await stack.db.pool.query<{ event_id: string; status: string }>(
        `SELECT event_id, status FROM hookgate.inbox WHERE endpoint = 'ops' AND event_id = ANY($1)`,
        [ids],
      )
    ).rows.map((row) => [row.event_id, row.status]),
  );

async function deadEvents(ids: readonly string[]): Promise<void> {
  await stack.db.pool.query(`INSERT INTO public.fail_control (event_id) SELECT unnest($1::text[])`, [ids]);
  await stack.claimer.claim(
    'ops',
    ids.map((eventId, n) => ({ eventId, entityType: 'thing', entityId: `${eventId}_${n}`, version: 1 })),
  );
  await waitFor('the events to be dead', async () =>
    [...(await statuses(ids)).values()].every((status) => status === 'dead'),
  );
  await stack.db.pool.query(`DELETE FROM public.fail_control`);
}

describe('hookgate discard', () => {
  it('refuses to run without a reason, or without --status or --id', async () => {
    const noReason = await runCliInProcess(
      ['discard', '--endpoint', 'ops', '--status', 'dead', '--config', stack.configFile],
      {
        DATABASE_URL: stack.db.url,
      },
    );
    expect(noReason.code).toBe(2);
    expect(noReason.stderr).toMatch(/--reason.*say why/);
    const noTarget = await runCliInProcess(
      ['discard', '--endpoint', 'ops', '--reason', 'x', '--config', stack.configFile],
      {
        DATABASE_URL: stack.db.url,
      },
    );
    expect(noTarget.code).toBe(2);
    expect(noTarget.stderr).toMatch(/--status.*or --id is required/);
    const pending = await runCliInProcess(
      ['discard', '--endpoint', 'ops', '--status', 'pending', '--reason', 'x', '--config', stack.configFile],
      { DATABASE_URL: stack.db.url },
    );
    expect(pending.code).toBe(2);
  });

  it('a dry run lists and changes nothing; a discard keeps who, why and when, and requeue leaves it unless asked', async () => {
    await deadEvents(['x1', 'x2']);
    const dry = await runCliInProcess(
      [
        'discard',
        '--endpoint',
        'ops',
        '--status',
        'dead',
        '--reason',
        'cannot apply',
        '--dry-run',
        '--json',
        '--config',
        stack.configFile,
      ],
      envOf('carol'),
    );
    expect(dry.code, dry.output).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({
      dry_run: true,
      would_discard: 2,
      event_ids: ['x1', 'x2'],
    });
    expect([...(await statuses(['x1', 'x2'])).values()]).toEqual(['dead', 'dead']);

    const real = await runCliInProcess(
      [
        'discard',
        '--endpoint',
        'ops',
        '--id',
        'x1',
        '--reason',
        'projection_unkeyed: never applicable',
        '--config',
        stack.configFile,
      ],
      envOf('carol'),
    );
    expect(real.code, real.output).toBe(0);
    expect(real.stdout).toMatch(/Discarded 1 event\(s\) of ops/);
    const row = (
      await stack.db.pool.query(
        `SELECT status, discarded_by, discard_reason, discarded_at, processed_at FROM hookgate.inbox WHERE event_id = 'x1'`,
      )
    ).rows[0];
    expect(row).toMatchObject({
      status: 'discarded',
      discarded_by: 'carol',
      discard_reason: 'projection_unkeyed: never applicable',
      processed_at: null,
    });
    expect(row.discarded_at).toBeInstanceOf(Date);
    // Out of the backlog: stats counts it as discarded, not dead.
    const stats = await runCliInProcess(
      ['stats', '--json', '--endpoint', 'ops', '--config', stack.configFile],
      {
        DATABASE_URL: stack.db.url,
      },
    );
    expect(JSON.parse(stats.stdout).endpoints[0]).toMatchObject({ dead: 1, discarded: 1 });
    // Its timeline and its fields say who, why and when.
    const show = await runCliInProcess(
      ['events', 'show', 'x1', '--endpoint', 'ops', '--config', stack.configFile],
      {
        DATABASE_URL: stack.db.url,
      },
    );
    expect(show.stdout).toMatch(/status +discarded/);
    expect(show.stdout).toMatch(/discarded +\S+Z by carol: projection_unkeyed: never applicable/);
    expect(show.stdout).toMatch(/\S+Z +discarded by carol: projection_unkeyed: never applicable/);

    // requeue leaves a discarded event alone unless asked for it by status.
    const byId = await runCliInProcess(
      ['requeue', '--endpoint', 'ops', '--id', 'x1', '--config', stack.configFile],
      envOf('dan'),
    );
    expect(byId.code).toBe(2);
    const all = await runCliInProcess(
      ['requeue', '--endpoint', 'ops', '--json', '--config', stack.configFile],
      envOf('dan'),
    );
    expect(all.code, all.output).toBe(0);
    expect(JSON.parse(all.stdout)).toMatchObject({ requeued: 1, event_ids: ['x2'] });
    expect((await statuses(['x1'])).get('x1')).toBe('discarded');
    const asked = await runCliInProcess(
      ['requeue', '--endpoint', 'ops', '--status', 'discarded', '--id', 'x1', '--config', stack.configFile],
      envOf('dan'),
    );
    expect(asked.code, asked.output).toBe(0);
    await waitFor('both applied', async () =>
      [...(await statuses(['x1', 'x2'])).values()].every((status) => status === 'processed'),
    );
    expect(
      (await stack.db.pool.query(`SELECT discarded_by FROM hookgate.inbox WHERE event_id = 'x1'`)).rows[0]
        .discarded_by,
    ).toBeNull();
  }, 90_000);

  it('a discard and a requeue of the same events at once: each event ends in exactly one state, both audited', async () => {
    await deadEvents(IDS);
    const [discarded, requeued] = await Promise.all([
      runHookgate(
        [
          'discard',
          '--endpoint',
          'ops',
          '--id',
          ...IDS,
          '--reason',
          'duplicate of a manual fix',
          '--json',
          '--config',
          stack.configFile,
        ],
        { env: envOf('alice') },
      ),
      runHookgate(['requeue', '--endpoint', 'ops', '--id', ...IDS, '--json', '--config', stack.configFile], {
        env: envOf('bob'),
      }),
    ]);
    // Each either moved some or found nothing left (exit 2), never failed.
    expect([0, 2], discarded.output).toContain(discarded.code);
    expect([0, 2], requeued.output).toContain(requeued.code);
    await waitFor('no event pending', async () =>
      [...(await statuses(IDS)).values()].every((status) => status !== 'pending'),
    );
    const audit = await stack.db.pool.query<{
      actor: string;
      command: string;
      event_ids: string[];
      count: string;
    }>(
      `SELECT actor, command, event_ids, count FROM hookgate.audit
        WHERE NOT dry_run AND actor IN ('alice', 'bob') ORDER BY actor`,
    );
    expect(audit.rows.map((row) => [row.actor, row.command])).toEqual([
      ['alice', 'discard'],
      ['bob', 'requeue'],
    ]);
    const byDiscard = new Set(audit.rows[0]!.event_ids);
    const byRequeue = new Set(audit.rows[1]!.event_ids);
    const now = await statuses(IDS);
    const effects = await effectCounts(stack.db.pool, 'ops');
    for (const id of IDS) {
      // Exactly one of the two actions took it, and its state and effects say which.
      expect(byDiscard.has(id) !== byRequeue.has(id), id).toBe(true);
      if (byDiscard.has(id)) {
        expect(now.get(id), id).toBe('discarded');
        expect(effects.get(id), id).toBeUndefined();
      } else {
        expect(now.get(id), id).toBe('processed');
        expect(effects.get(id), id).toBe(1);
      }
    }
    expect(Number(audit.rows[0]!.count) + Number(audit.rows[1]!.count)).toBe(IDS.length);
  }, 90_000);
});
