import { userInfo } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { actionsOnEvent, listActions, recordActions } from '../../services/core/audit/audit.ts';
import { runCliInProcess } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

// The audit trail: who did what, when, to which events, dry run or not; `hookgate audit` reads it.
let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});

afterAll(async () => {
  await db?.drop();
});

describe('the audit trail', () => {
  it('records several actions in one statement and lists them newest first by time, endpoint and command', async () => {
    const ids = await recordActions(db.pool, [
      {
        actor: 'alice',
        command: 'requeue',
        endpoint: 'stripe',
        filters: { statuses: ['dead'] },
        count: 2,
        dryRun: false,
        eventIds: ['evt_1', 'evt_2'],
      },
      {
        actor: 'bob',
        command: 'requeue',
        endpoint: 'stripe',
        filters: {},
        count: 1,
        dryRun: true,
        eventIds: ['evt_1'],
      },
      {
        actor: 'carol',
        command: 'discard',
        endpoint: 'github',
        filters: { ids: ['d1'] },
        count: 1,
        dryRun: false,
        eventIds: ['d1'],
        reason: 'cannot ever apply',
      },
    ]);
    expect(ids).toHaveLength(3);
    const stripe = await listActions(db.pool, { endpoint: 'stripe', limit: 10 });
    expect(stripe.map((row) => row.actor)).toEqual(['bob', 'alice']);
    expect(stripe[1]).toMatchObject({ count: 2, dry_run: false, event_ids: ['evt_1', 'evt_2'] });
    const discards = await listActions(db.pool, { command: 'discard', limit: 10 });
    expect(discards).toHaveLength(1);
    expect(discards[0]).toMatchObject({ actor: 'carol', reason: 'cannot ever apply', endpoint: 'github' });
    expect(await listActions(db.pool, { since: new Date(Date.now() + 60_000), limit: 10 })).toEqual([]);
    // An event's actions are the real runs that touched it, never a dry run's.
    expect((await actionsOnEvent(db.pool, 'stripe', 'evt_1')).map((row) => row.actor)).toEqual(['alice']);
    expect(await actionsOnEvent(db.pool, 'github', 'evt_1')).toEqual([]);
  });

  it('keeps at most 1000 event ids of an action, and its whole count', async () => {
    const eventIds = Array.from({ length: 1500 }, (_, n) => `bulk_${n}`);
    await recordActions(db.pool, [
      {
        actor: 'dave',
        command: 'requeue',
        endpoint: 'bulk',
        filters: {},
        count: 1500,
        dryRun: false,
        eventIds,
      },
    ]);
    const [row] = await listActions(db.pool, { endpoint: 'bulk', limit: 1 });
    expect(row!.count).toBe(1500);
    expect(row!.event_ids).toHaveLength(1000);
    expect(row!.event_ids[999]).toBe('bulk_999');
  });

  it('names the actor from --actor, else HOOKGATE_ACTOR, else the OS user; hookgate audit shows each', async () => {
    const env = { DATABASE_URL: db.url, HOOKGATE_CONFIG: undefined, HOOKGATE_ACTOR: undefined };
    const prune = ['prune', '--older-than', '30d', '--dry-run'];
    const flagged = await runCliInProcess([...prune, '--actor', 'erin'], { ...env, HOOKGATE_ACTOR: 'frank' });
    expect(flagged.code, flagged.output).toBe(0);
    const fromEnv = await runCliInProcess(prune, { ...env, HOOKGATE_ACTOR: 'frank' });
    expect(fromEnv.code, fromEnv.output).toBe(0);
    const fromOs = await runCliInProcess(prune, env);
    expect(fromOs.code, fromOs.output).toBe(0);
    const listed = await runCliInProcess(['audit', '--command', 'prune', '--json'], env);
    expect(listed.code, listed.output).toBe(0);
    const rows = JSON.parse(listed.stdout) as { actor: string; dry_run: boolean; command: string }[];
    expect(rows.map((row) => row.actor)).toEqual([userInfo().username, 'frank', 'erin']);
    expect(rows.every((row) => row.dry_run)).toBe(true);
    const human = await runCliInProcess(['audit', '--since', '1h', '--endpoint', 'github'], env);
    expect(human.code, human.output).toBe(0);
    expect(human.stdout).toMatch(/carol +discard +github +1 +no +ids=d1 +cannot ever apply/);
    const none = await runCliInProcess(['audit', '--endpoint', 'nowhere'], env);
    expect(none.code).toBe(0);
    expect(none.stderr).toMatch(/No operator action matches/);
  });
});
