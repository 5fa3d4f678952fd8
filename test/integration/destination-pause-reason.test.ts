import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliInProcess } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { Claimer, workerConfig, workerConfigDocument, writeConfigFile } from '../support/worker-harness.ts';

// A paused destination says so wherever an operator looks — stats, deliveries list, the audit —
// with who paused it, since when and why, not only as a HELD count.
const ENDPOINTS = {
  pay: {
    handler: 'record',
    destinations: { ledger: { url: 'http://127.0.0.1:9/ledger' }, crm: { url: 'http://127.0.0.1:9/crm' } },
  },
};

let db: TestDatabase;
let claimer: Claimer;
let env: Record<string, string>;

beforeAll(async () => {
  db = await createTestDatabase();
  claimer = await Claimer.start(db.url, workerConfig(ENDPOINTS));
  env = {
    DATABASE_URL: db.url,
    HOOKGATE_CONFIG: writeConfigFile(workerConfigDocument(ENDPOINTS)),
    HOOKGATE_ACTOR: 'alice',
  };
});

afterAll(async () => {
  await claimer?.stop();
  await db?.drop();
});

describe('destination pause --reason', () => {
  it('is shown by stats and deliveries list and kept in the audit trail; resume clears it', async () => {
    const pause = await runCliInProcess(
      ['destination', 'pause', 'ledger', '--reason', 'ledger API maintenance until 14:00'],
      env,
    );
    expect(pause.code, pause.output).toBe(0);
    expect(pause.stdout).toContain('Paused pay/ledger: 0 deliveries held.');

    const stats = await runCliInProcess(['stats'], env);
    expect(stats.code, stats.output).toBe(0);
    expect(stats.stdout).toMatch(
      /pay\s+ledger\s+.*closed\s+\S+ by alice: ledger API maintenance until 14:00/,
    );
    expect(stats.stdout).toMatch(/pay\s+crm\s+.*closed\s+-/);
    const json = JSON.parse((await runCliInProcess(['stats', '--json'], env)).stdout) as {
      destinations: { destination: string; paused: { by: string; reason: string | null } | null }[];
    };
    expect(
      json.destinations.map((d) => [d.destination, d.paused?.by ?? null, d.paused?.reason ?? null]),
    ).toEqual([
      ['crm', null, null],
      ['ledger', 'alice', 'ledger API maintenance until 14:00'],
    ]);

    // An event's deliveries to the paused destination are held, and the list says why.
    await db.pool.query(
      `INSERT INTO hookgate.destination_deliveries (endpoint, destination, event_id, event_type, webhook_id, status)
       VALUES ('pay', 'ledger', 'evt_1', 'thing.updated', 'msg_x', 'held')`,
    );
    const list = await runCliInProcess(['deliveries', 'list', '--destination', 'ledger'], env);
    expect(list.code, list.output).toBe(0);
    expect(list.stdout).toContain('pay/ledger is paused (');
    expect(list.stdout).toContain(
      'ago by alice: ledger API maintenance until 14:00); its deliveries are held',
    );

    const audit = await db.pool.query(
      `SELECT command, actor, reason FROM hookgate.audit WHERE command LIKE 'destination %' ORDER BY id`,
    );
    expect(audit.rows).toEqual([
      { command: 'destination pause', actor: 'alice', reason: 'ledger API maintenance until 14:00' },
    ]);

    expect((await runCliInProcess(['destination', 'resume', 'ledger'], env)).code).toBe(0);
    const after = JSON.parse((await runCliInProcess(['stats', '--json'], env)).stdout) as {
      destinations: { paused: unknown }[];
    };
    expect(after.destinations.every((d) => d.paused === null)).toBe(true);
    const state = await db.pool.query(`SELECT paused, reason FROM hookgate.destination_state`);
    expect(state.rows).toEqual([{ paused: false, reason: null }]);
  });
});
