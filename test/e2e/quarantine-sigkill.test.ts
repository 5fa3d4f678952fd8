import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { freePort } from '../../services/core/db/embedded.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { type RunningProcess, runHookgate, startHookgate } from '../support/process.ts';
import { waitFor, workerConfigDocument } from '../support/worker-harness.ts';

// Quarantine (promise 8) with real processes: a gateway `serve` process quarantines an
// authentic delivery it cannot make an event of (the Standard Webhooks spec's example body, no
// `type`), answers 200, and is SIGKILLed right after the answer. The row is there (the 200 came
// after its commit), and `hookgate quarantine release` with a fixed config, run as its own
// process while a worker process runs, has it applied once; a second release changes nothing.

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const SPEC_EXAMPLE = '{"test": 2432232314}';

let db: TestDatabase;
let dir: string;
const processes: RunningProcess[] = [];
const env = () => ({ DATABASE_URL: db.url, METRICS_PORT: '0', LOG_LEVEL: 'warn', HOOKGATE_ACTOR: 'e2e' });

beforeAll(async () => {
  db = await createTestDatabase();
  dir = mkdtempSync(join(tmpdir(), 'hookgate-quarantine-'));
  writeFileSync(join(dir, 'as-it-was.yaml'), stringify(workerConfigDocument({ alpha: {} })));
  writeFileSync(
    join(dir, 'fixed.yaml'),
    stringify(workerConfigDocument({ alpha: { extract: { eventType: '/test' } } })),
  );
});

afterAll(async () => {
  for (const running of processes) running.child.kill('SIGKILL');
  await Promise.all(processes.map((running) => running.exited().catch(() => {})));
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe('a quarantined delivery and a gateway SIGKILL', { timeout: 180_000 }, () => {
  it('survives the kill right after its 200, and is applied once after release', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const gateway = startHookgate(['serve', '--role', 'gateway', '--config', join(dir, 'as-it-was.yaml')], {
      env: { ...env(), PORT: String(port) },
    });
    processes.push(gateway);
    await waitFor(
      'gateway ready',
      async () => (await fetch(`${url}/readyz`).catch(() => null))?.ok === true,
      60_000,
    );

    const delivery = standardWebhook(SECRET, { eventId: 'msg_killed', body: SPEC_EXAMPLE });
    const reply = await post(`${url}/webhooks/alpha`, delivery);
    gateway.child.kill('SIGKILL');
    expect([reply.status, reply.json]).toEqual([
      200,
      { status: 'quarantined', reason: 'event_type_missing' },
    ]);
    expect(await gateway.exited()).toBe('SIGKILL');

    const held = await db.pool.query<{ id: string }>(
      `SELECT id::text AS id FROM hookgate.quarantine WHERE endpoint = 'alpha' AND released_at IS NULL`,
    );
    expect(held.rows).toHaveLength(1);
    const id = held.rows[0]!.id;
    expect((await db.pool.query('SELECT count(*)::int AS n FROM hookgate.inbox')).rows[0].n).toBe(0);

    const worker = startHookgate(['serve', '--role', 'worker', '--config', join(dir, 'fixed.yaml')], {
      env: { ...env(), PORT: '0', LOG_LEVEL: 'info' },
    });
    processes.push(worker);
    const released = await runHookgate(['quarantine', 'release', id, '--config', join(dir, 'fixed.yaml')], {
      env: env(),
    });
    expect(released.code).toBe(0);
    expect(released.output).toContain(`${id}: released as event msg_killed (accepted)\n`);
    await waitFor('the released event applied', async () => {
      const { rows } = await db.pool.query(`SELECT status FROM hookgate.inbox WHERE event_id = 'msg_killed'`);
      return rows[0]?.status === 'processed';
    });

    const again = await runHookgate(['quarantine', 'release', id, '--config', join(dir, 'fixed.yaml')], {
      env: env(),
    });
    expect(again.code).toBe(2);
    const { rows } = await db.pool.query(
      `SELECT event_id, event_type, status, attempts FROM hookgate.inbox WHERE endpoint = 'alpha'`,
    );
    expect(rows).toEqual([
      { event_id: 'msg_killed', event_type: '2432232314', status: 'processed', attempts: 1 },
    ]);
  });
});
