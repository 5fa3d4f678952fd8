import { createHash } from 'node:crypto';
import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningConsole, startConsole } from '../../services/console/server.ts';
import { parseConfig } from '../../services/core/config/load.ts';
import { createBoss } from '../../services/core/queue/boss.ts';
import { silentLogger } from '../support/apply.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { SW_SECRET } from '../support/gateway.ts';

// The console's destinations page and its pause/resume actions, over HTTP against a real console
// and PostgreSQL: the page shows every configured destination with the stats read's figures, the
// actions go through the CLI's functions (held rows, audit as console:<user>), CSRF is required.
const TOKEN = 'console-destinations-test-token-0123456789';

let db: TestDatabase;
let boss: PgBoss;
let running: RunningConsole;

beforeAll(async () => {
  db = await createTestDatabase();
  boss = createBoss({
    connectionString: db.url,
    max: 2,
    supervise: false,
    applicationName: 'console-dest-test',
  });
  boss.on('error', () => {});
  await boss.start();
  const config = parseConfig(
    {
      endpoints: {
        shop: {
          provider: 'standard-webhooks',
          secrets: [SW_SECRET],
          destinations: {
            ledger: { url: 'http://127.0.0.1:9/ledger' },
            crm: { url: 'http://127.0.0.1:9/crm' },
          },
        },
      },
      console: {
        port: 0,
        sessionSecret: 'console-destinations-test-session-secret-0123',
        tokens: [{ name: 'ops', sha256: createHash('sha256').update(TOKEN).digest('hex') }],
      },
    },
    {},
  );
  running = await startConsole({
    config,
    databaseUrl: db.url,
    boss,
    logger: silentLogger,
    embedded: false,
    env: {},
  });
  // One dead and one waiting delivery of ledger.
  await db.pool.query(
    `INSERT INTO hookgate.destination_deliveries (endpoint, destination, event_id, event_type, webhook_id, status, attempts, next_attempt_at)
     VALUES ('shop', 'ledger', 'evt_1', 'x', 'msg_1', 'dead', 3, now()), ('shop', 'ledger', 'evt_2', 'x', 'msg_2', 'pending', 0, now())`,
  );
});

afterAll(async () => {
  await running?.stop();
  await boss?.stop({ graceful: false, close: true });
  await db?.drop();
});

const auth = { authorization: `Bearer ${TOKEN}` };
const get = async (path: string) => {
  const res = await fetch(new URL(path, running.url), { headers: auth, redirect: 'manual' });
  return { status: res.status, body: await res.text() };
};
const post = async (path: string, fields: Record<string, string>) => {
  const res = await fetch(new URL(path, running.url), {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
    redirect: 'manual',
  });
  return { status: res.status, body: await res.text() };
};
const csrfOf = (page: string) => /name="_csrf" value="([^"]+)"/.exec(page)?.[1] ?? '';
const rowOf = (page: string, destination: string) =>
  (page.split('<tr ').find((row) => row.includes(`aria-label="shop/${destination}"`)) ?? '').replace(
    /\s*\n\s*/g,
    '',
  );

describe('console destinations page', () => {
  it('lists every configured destination with its figures, linked from the nav', async () => {
    const page = await get('/destinations');
    expect(page.status).toBe(200);
    expect(page.body).toContain('<a href="/destinations" aria-current="page">Destinations</a>');
    const ledger = rowOf(page.body, 'ledger');
    expect(ledger).toContain('>active</span>');
    expect(ledger).toContain('>closed</span>');
    expect(ledger).toContain(
      '<td>1</td><td>0</td><td><span class="status status-dead">1</span></td><td>0</td>',
    );
    expect(rowOf(page.body, 'crm')).toContain('<td>0</td><td>0</td><td>0</td><td>0</td>');
  });

  it('pauses and resumes a destination after a preview, audited as console:<user>, CSRF required', async () => {
    const csrf = csrfOf((await get('/destinations')).body);
    const target = { endpoint: 'shop', destination: 'ledger' };
    const foreign = await fetch(new URL('/actions/destination-pause', running.url), {
      method: 'POST',
      headers: {
        ...auth,
        origin: 'https://evil.example',
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ _csrf: csrf, ...target }).toString(),
    });
    expect(foreign.status).toBe(403);
    const preview = await post('/actions/destination-pause/preview', { _csrf: csrf, ...target });
    expect(preview.status).toBe(200);
    expect(preview.body).toContain('Would pause ');
    const paused = await post('/actions/destination-pause', { _csrf: csrf, ...target });
    expect(paused.body).toContain('deliveries held until it is resumed.');
    const page = (await get('/destinations')).body;
    expect(rowOf(page, 'ledger')).toMatch(/>paused<\/span>.*since .* by console:ops/);
    expect(rowOf(page, 'ledger')).toContain('Resume…');
    const resumed = await post('/actions/destination-resume', { _csrf: csrf, ...target });
    expect(resumed.body).toContain('held deliveries are due again.');
    const audit = await db.pool.query<{ actor: string; command: string; count: number }>(
      `SELECT actor, command, count::int AS count FROM hookgate.audit ORDER BY id`,
    );
    expect(audit.rows).toEqual([
      { actor: 'console:ops', command: 'destination pause', count: 1 },
      { actor: 'console:ops', command: 'destination resume', count: 1 },
    ]);
    const unknown = await post('/actions/destination-pause/preview', {
      _csrf: csrf,
      endpoint: 'shop',
      destination: 'nope',
    });
    expect(unknown.body).toContain('shop/nope is not a configured destination.');
  });

  it('redelivers the dead deliveries of a destination, and one delivered delivery by id, after a dry run', async () => {
    const csrf = csrfOf((await get('/destinations')).body);
    expect(rowOf((await get('/destinations')).body, 'ledger')).toContain('Redeliver dead…');
    const target = { endpoint: 'shop', destination: 'ledger' };
    const preview = await post('/actions/redeliver/preview', { _csrf: csrf, ...target });
    expect(preview.body).toContain('Would send 1 delivery of ');
    const run = await post('/actions/redeliver', { _csrf: csrf, ...target });
    expect(run.body).toContain('Redelivering 1 delivery of ');
    const rows = await db.pool.query<{ event_id: string; status: string; webhook_id: string }>(
      `SELECT event_id, status, webhook_id FROM hookgate.destination_deliveries ORDER BY event_id`,
    );
    expect(rows.rows).toEqual([
      { event_id: 'evt_1', status: 'pending', webhook_id: 'msg_1' },
      { event_id: 'evt_2', status: 'pending', webhook_id: 'msg_2' },
    ]);
    const { rows: made } = await db.pool.query<{ id: string }>(
      `INSERT INTO hookgate.destination_deliveries (endpoint, destination, event_id, event_type, webhook_id, status, attempts, settled_at)
       VALUES ('shop', 'crm', 'evt_3', 'x', 'msg_3', 'delivered', 1, now()) RETURNING id::text AS id`,
    );
    const one = { endpoint: 'shop', destination: 'crm', delivery_id: made[0]!.id };
    expect((await post('/actions/redeliver/preview', { _csrf: csrf, ...one })).body).toContain(
      `(delivery ${one.delivery_id})`,
    );
    expect((await post('/actions/redeliver', { _csrf: csrf, ...one })).body).toContain(
      'Redelivering 1 delivery of ',
    );
    const audit = await db.pool.query<{ command: string; dry_run: boolean; actor: string }>(
      `SELECT command, dry_run, actor FROM hookgate.audit WHERE command = 'redeliver' ORDER BY id`,
    );
    // Each preview and each run's own dry run are audited, as the CLI's dry runs are.
    expect(audit.rows.filter((row) => !row.dry_run)).toEqual([
      { command: 'redeliver', dry_run: false, actor: 'console:ops' },
      { command: 'redeliver', dry_run: false, actor: 'console:ops' },
    ]);
  });
});
