import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import { HookgateError } from '../../services/core/errors.ts';
import { createSqlHandler } from '../../services/core/handlers/sql.ts';
import type { InboxEvent } from '../../services/core/handlers/types.ts';
import { applyEvent, silentLogger, startBoss } from '../support/apply.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

// `${ENV}` in a sql: statement is bound as a parameter, never pasted into the SQL text.
let db: TestDatabase;
let boss: PgBoss;
let counter = 0;
const deps = { endpoint: 'app', logger: silentLogger, configDir: process.cwd() };
const HOSTILE = "x'); DROP TABLE app.tenants; --";

function appEvent(): InboxEvent {
  counter += 1;
  return {
    endpoint: 'app',
    eventId: `evt_${counter}`,
    provider: 'hmac',
    eventType: 'created',
    entityType: null,
    entityId: null,
    entityVersion: null,
    payload: { n: counter },
    headers: {},
    receivedAt: new Date(),
    attempts: 1,
    traceparent: null,
  };
}

beforeAll(async () => {
  db = await createTestDatabase();
  boss = await startBoss(db.url);
  await db.pool.query(`
    CREATE SCHEMA app;
    CREATE TABLE app.tenants (event_id text, tenant text, region text);
  `);
});

afterAll(async () => {
  await boss?.stop({ graceful: false, close: true });
  await db?.drop();
});

const STATEMENT =
  "sql:INSERT INTO app.tenants (event_id, tenant, region) VALUES ($1::jsonb->>'event_id', ${TENANT}, ${REGION:-eu})";

describe('sql: handler and ${ENV}', () => {
  it('the config loader leaves a sql: statement uninterpolated', () => {
    const config = parseConfig(
      { endpoints: { app: { provider: 'stripe', secrets: ['whsec_x'], handler: STATEMENT } } },
      { TENANT: HOSTILE },
    );
    expect(config.endpoints.app?.handler).toBe(STATEMENT);
  });

  it('binds each variable as a text parameter: a hostile value is stored as data, not run', async () => {
    const handler = createSqlHandler(STATEMENT.slice('sql:'.length), {}, deps, { TENANT: HOSTILE });
    const event = appEvent();
    expect(await applyEvent(db.pool, boss, handler, event)).toBe('processed');
    const { rows } = await db.pool.query('SELECT event_id, tenant, region FROM app.tenants');
    expect(rows).toEqual([{ event_id: event.eventId, tenant: HOSTILE, region: 'eu' }]);
  });

  it('refuses a reference inside quotes, an unset variable, and a $2 the user wrote', () => {
    const boot = (statement: string, env: Record<string, string> = {}) => {
      try {
        createSqlHandler(statement, {}, deps, env);
      } catch (error) {
        expect(error).toBeInstanceOf(HookgateError);
        return (error as HookgateError).message;
      }
      throw new Error('expected the statement to be refused');
    };
    expect(boot("SELECT $1, '${TENANT}'", { TENANT: 't' })).toMatch(/inside quotes or a comment/);
    expect(boot('SELECT $1, ${TENANT}')).toMatch(/environment variable TENANT is not set/);
    expect(boot('SELECT $1, ${constructor}')).toMatch(/environment variable constructor is not set/);
    expect(boot('SELECT $1, $2, ${TENANT}', { TENANT: 't' })).toMatch(
      /only \$1 is bound; the statement also uses \$2/,
    );
  });
});
