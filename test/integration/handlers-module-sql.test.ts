import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HookgateError } from '../../services/core/errors.ts';
import { createHandler } from '../../services/core/handlers/index.ts';
import type { InboxEvent } from '../../services/core/handlers/types.ts';
import { applyEvent, silentLogger, startBoss } from '../support/apply.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

let db: TestDatabase;
let boss: PgBoss;
let configDir: string;
let counter = 0;
const deps = () => ({ endpoint: 'app', logger: silentLogger, configDir });

function appEvent(type: string, payload: Record<string, unknown> = {}): InboxEvent {
  counter += 1;
  return {
    endpoint: 'app',
    eventId: `evt_${counter}`,
    provider: 'hmac',
    eventType: type,
    entityType: 'thing',
    entityId: `t_${counter}`,
    entityVersion: '1700000000000001',
    payload: { type, ...payload },
    headers: {},
    receivedAt: new Date('2026-11-30T00:00:00Z'),
    attempts: 1,
    traceparent: null,
  };
}

async function rows(): Promise<{ event_id: string; type: string }[]> {
  return (await db.pool.query('SELECT event_id, type FROM app.applied ORDER BY id')).rows;
}

async function expectBootError(spec: string, code: string, message: RegExp, options: unknown = {}) {
  const error = await createHandler(spec, options, deps()).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(HookgateError);
  expect((error as HookgateError).code).toBe(code);
  expect((error as HookgateError).message).toMatch(message);
}

beforeAll(async () => {
  db = await createTestDatabase();
  boss = await startBoss(db.url);
  configDir = mkdtempSync(join(tmpdir(), 'hookgate-handlers-'));
  await db.pool.query(`
    CREATE SCHEMA app;
    CREATE TABLE app.applied (id serial PRIMARY KEY, event_id text UNIQUE, type text, version bigint, doc jsonb);
    CREATE FUNCTION app.apply_event(e jsonb) RETURNS text LANGUAGE plpgsql AS $$
    BEGIN
      IF e->>'type' = 'boom' THEN RAISE EXCEPTION 'app refused %', e->>'event_id'; END IF;
      INSERT INTO app.applied (event_id, type, version, doc)
        VALUES (e->>'event_id', e->>'type', (e->>'version')::bigint, e)
        ON CONFLICT (event_id) DO NOTHING;
      IF e->>'type' = 'noise' THEN RETURN 'ignored'; END IF;
      IF e->>'type' = 'weird' THEN RETURN 'maybe'; END IF;
      RETURN NULL;
    END $$;
  `);
  const file = (name: string, text: string) => writeFileSync(join(configDir, name), text);
  file(
    'typed.ts',
    `import type { ApplyContext, InboxEvent } from '${join(process.cwd(), 'services/core/handlers/types.ts')}';
     export const handler = {
       name: 'typed',
       async apply({ tx }: ApplyContext, event: InboxEvent): Promise<'ignored' | undefined> {
         if (event.eventType === 'skip') return 'ignored';
         if (event.eventType === 'bad-result') return 'done' as never;
         await tx.query('INSERT INTO app.applied (event_id, type) VALUES ($1, $2)', [event.eventId, 'typed:' + event.eventType]);
         return undefined;
       },
     };`,
  );
  file(
    'factory.mjs',
    `export default async function create(options, deps) {
       return { async apply({ tx }, event) {
         await tx.query('INSERT INTO app.applied (event_id, type) VALUES ($1, $2)', [event.eventId, options.prefix + deps.endpoint]);
         return 'processed';
       } };
     }`,
  );
  file('not-a-handler.mjs', 'export default 42;');
  file('no-exports.mjs', 'export const other = 1;');
  file('broken.mjs', 'export const handler = {;');
  file('factory-throws.mjs', "export function handler() { throw new Error('missing option token'); }");
});

afterAll(async () => {
  await boss?.stop({ graceful: false, close: true });
  await db?.drop();
  if (configDir) rmSync(configDir, { recursive: true, force: true });
});

describe('module: handler', () => {
  it('loads a TypeScript module relative to the config directory and applies in the transaction', async () => {
    const handler = await createHandler('module:./typed.ts', {}, deps());
    expect(handler.name).toBe('typed');
    const event = appEvent('created');
    expect(await applyEvent(db.pool, boss, handler, event)).toBe('processed');
    expect(await applyEvent(db.pool, boss, handler, appEvent('skip'))).toBe('ignored');
    expect((await rows()).filter((r) => r.event_id === event.eventId)).toEqual([
      { event_id: event.eventId, type: 'typed:created' },
    ]);
  });

  it('a default-exported factory receives the options and deps', async () => {
    const handler = await createHandler('module:factory.mjs', { prefix: 'via-' }, deps());
    expect(handler.name).toBe('module:factory.mjs');
    const event = appEvent('x');
    await applyEvent(db.pool, boss, handler, event);
    expect((await rows()).find((r) => r.event_id === event.eventId)?.type).toBe('via-app');
  });

  it('a module returning something other than an outcome fails the apply, writing nothing', async () => {
    const handler = await createHandler('module:./typed.ts', {}, deps());
    await expect(applyEvent(db.pool, boss, handler, appEvent('bad-result'))).rejects.toThrow(
      /module:\.\/typed\.ts returned "done"; expected 'processed', 'ignored', 'stale' or nothing/,
    );
  });

  it('bad modules stop the boot with a clear error', async () => {
    await expectBootError(
      'module:./missing.ts',
      'handler_module_invalid',
      /^app\.handler \(module:\.\/missing\.ts\): no file at .*missing\.ts/,
    );
    await expectBootError(
      'module:not-a-handler.mjs',
      'handler_module_invalid',
      /the export is not a handler: expected an object with an apply\(ctx, event\) function/,
    );
    await expectBootError(
      'module:no-exports.mjs',
      'handler_module_invalid',
      /exports neither `handler` nor a default export/,
    );
    await expectBootError('module:broken.mjs', 'handler_module_invalid', /importing .*broken\.mjs failed/);
    await expectBootError(
      'module:factory-throws.mjs',
      'handler_module_invalid',
      /its handler factory threw: missing option token/,
    );
    await expectBootError('module: ', 'handler_module_invalid', /the module path is empty/);
  });
});

describe('sql: handler', () => {
  it('calls the statement with the event as $1 jsonb inside the transaction', async () => {
    const handler = await createHandler('sql:SELECT app.apply_event($1::jsonb)', {}, deps());
    const event = appEvent('created', { amount: 3 });
    expect(await applyEvent(db.pool, boss, handler, event)).toBe('processed');
    const { rows: docs } = await db.pool.query('SELECT version, doc FROM app.applied WHERE event_id = $1', [
      event.eventId,
    ]);
    expect(docs[0].version).toBe('1700000000000001');
    expect(docs[0].doc).toEqual({
      endpoint: 'app',
      event_id: event.eventId,
      provider: 'hmac',
      type: 'created',
      entity: { type: 'thing', id: event.entityId },
      version: '1700000000000001',
      // When the inbox received it (the claim's time).
      received_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      attempts: 1,
      payload: { type: 'created', amount: 3 },
    });
  });

  it('the returned text is the outcome', async () => {
    const handler = await createHandler('sql:SELECT app.apply_event($1::jsonb);', {}, deps());
    expect(await applyEvent(db.pool, boss, handler, appEvent('noise'))).toBe('ignored');
    await expect(applyEvent(db.pool, boss, handler, appEvent('weird'))).rejects.toThrow(
      /sql handler of app returned "maybe"; expected 'processed', 'ignored', 'stale' or null/,
    );
  });

  it('a statement without a result row (plain INSERT) is processed', async () => {
    const handler = await createHandler(
      `sql:INSERT INTO app.applied (event_id, type) VALUES ($1::jsonb->>'event_id', 'plain:' || ($1::jsonb->>'type'))`,
      {},
      deps(),
    );
    const event = appEvent('insert');
    expect(await applyEvent(db.pool, boss, handler, event)).toBe('processed');
    expect((await rows()).find((r) => r.event_id === event.eventId)?.type).toBe('plain:insert');
  });

  it('an exception in the function fails the apply and its writes roll back', async () => {
    const handler = await createHandler('sql:SELECT app.apply_event($1::jsonb)', {}, deps());
    const event = appEvent('boom');
    await expect(applyEvent(db.pool, boss, handler, event)).rejects.toThrow(/app refused evt_/);
    expect((await rows()).find((r) => r.event_id === event.eventId)).toBeUndefined();
  });

  it('bad statements stop the boot with a clear error', async () => {
    await expectBootError('sql: ', 'handler_spec_invalid', /^app\.handler \(sql:\): the statement is empty/);
    await expectBootError('sql:SELECT app.apply_event()', 'handler_spec_invalid', /must use \$1/);
    await expectBootError("sql:SELECT '$1', 1", 'handler_spec_invalid', /must use \$1/);
    await expectBootError(
      'sql:SELECT app.f($1, $2)',
      'handler_spec_invalid',
      /only \$1 is bound; the statement also uses \$2/,
    );
    await expectBootError(
      'sql:COMMIT; SELECT $1',
      'handler_spec_invalid',
      /transaction control is not allowed/,
    );
    await expectBootError(
      'sql:SELECT $1; DROP TABLE app.applied',
      'handler_spec_invalid',
      /only one statement/,
    );
    await expectBootError(
      'sql:SELECT $1::jsonb',
      'handler_options_invalid',
      /^app\.options\.x: unknown option$/,
      { x: 1 },
    );
  });
});
