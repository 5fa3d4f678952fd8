// hookgate's connections through a stock PgBouncer (Debian 12's 1.18, no ignore_startup_parameters)
// in front of the run's PostgreSQL (18 and 15): the limits still apply, and a pooler that lends
// sessions per transaction or per statement is recognised and refused.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../services/core/db/pool.ts';
import { poolingMode, refuseSharedSessions } from '../../services/core/db/pooling-mode.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { type PoolMode, startPgBouncer, type TestPgBouncer } from '../support/pgbouncer.ts';

let db: TestDatabase;
const bouncers = new Map<PoolMode | 'statement', TestPgBouncer>();

beforeAll(async () => {
  db = await createTestDatabase({ migrated: false });
  bouncers.set('session', await startPgBouncer(db.url, { mode: 'session' }));
  bouncers.set('transaction', await startPgBouncer(db.url, { mode: 'transaction' }));
  bouncers.set(
    'statement',
    await startPgBouncer(db.url, { mode: 'session', settings: { pool_mode: 'statement' } }),
  );
});

afterAll(async () => {
  await Promise.all([...bouncers.values()].map((b) => b.stop()));
  await db?.drop();
});

function through(mode: PoolMode | 'statement'): string {
  return bouncers.get(mode)!.url(db.name);
}

function poolThrough(
  url: string,
  limits: { statementTimeoutMs: number; idleInTransactionTimeoutMs?: number },
) {
  return createPool({
    connectionString: url,
    max: 2,
    connectTimeoutMs: 5_000,
    applicationName: 'test-pgbouncer',
    ...limits,
  });
}

describe('a stock PgBouncer in session mode', () => {
  it('refuses limits sent as startup parameters (what node-postgres did for hookgate before)', async () => {
    expect(bouncers.get('session')!.version).toMatch(/^PgBouncer 1\.18\./);
    const client = new pg.Client({ connectionString: through('session'), statement_timeout: 1_000 });
    client.on('error', () => {});
    await expect(client.connect()).rejects.toThrow(/unsupported startup parameter: statement_timeout/);
    await client.end().catch(() => {});
  });

  it("lets hookgate's pool connect, and its statement timeout still cancels a long statement", async () => {
    const pool = poolThrough(through('session'), { statementTimeoutMs: 700 });
    try {
      expect((await pool.query<{ statement_timeout: string }>('SHOW statement_timeout')).rows[0]).toEqual({
        statement_timeout: '700ms',
      });
      const started = Date.now();
      // PostgreSQL's own cancellation (57014), not the client-side backstop 2 s later.
      await expect(pool.query('SELECT pg_sleep(10)')).rejects.toMatchObject({ code: '57014' });
      expect(Date.now() - started).toBeLessThan(2_500);
      // Every new connection gets it, not only the first.
      const clients = await Promise.all([pool.connect(), pool.connect()]);
      for (const client of clients) {
        expect((await client.query('SHOW statement_timeout')).rows[0].statement_timeout).toBe('700ms');
        client.release();
      }
    } finally {
      await pool.end();
    }
  });

  it('ends a session left idle in a transaction, as directly', async () => {
    const pool = poolThrough(through('session'), {
      statementTimeoutMs: 5_000,
      idleInTransactionTimeoutMs: 300,
    });
    try {
      const client = await pool.connect();
      expect((await client.query('SHOW idle_in_transaction_session_timeout')).rows[0]).toEqual({
        idle_in_transaction_session_timeout: '300ms',
      });
      await client.query('BEGIN');
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      await expect(client.query('SELECT 1')).rejects.toThrow();
      client.release(true);
      expect((await pool.query('SELECT 1 AS one')).rows[0].one).toBe(1);
    } finally {
      await pool.end();
    }
  });
});

describe('pooling modes', () => {
  it('PostgreSQL directly and PgBouncer in session mode are sessions; transaction and statement modes are told apart', async () => {
    const modes: Record<string, string> = {};
    for (const [name, url] of [
      ['direct', db.url],
      ['session', through('session')],
      ['transaction', through('transaction')],
      ['statement', through('statement')],
    ] as const) {
      const pool = poolThrough(url, { statementTimeoutMs: 5_000 });
      try {
        modes[name] = await poolingMode(pool);
      } finally {
        await pool.end();
      }
    }
    expect(modes).toEqual({
      direct: 'session',
      session: 'session',
      transaction: 'transaction',
      statement: 'statement',
    });
  });

  it('transaction mode is refused with what to change; session mode passes', async () => {
    const transaction = poolThrough(through('transaction'), { statementTimeoutMs: 5_000 });
    const session = poolThrough(through('session'), { statementTimeoutMs: 5_000 });
    try {
      await expect(refuseSharedSessions(transaction, 'PgBouncer at 127.0.0.1')).rejects.toMatchObject({
        code: 'database_pooling_unsupported',
        message: expect.stringMatching(
          /per transaction \(PgBouncer in transaction mode\).*pool_mode = session/,
        ),
      });
      await expect(refuseSharedSessions(session, 'PgBouncer at 127.0.0.1')).resolves.toBeUndefined();
    } finally {
      await Promise.all([transaction.end(), session.end()]);
    }
  });
});
