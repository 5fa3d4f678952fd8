import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routesFrom } from '../../services/core/destinations/routes.ts';
import { createLogger } from '../../services/core/logging.ts';
import { type RunningDestinationRelay, startDestinationRelay } from '../../services/worker/destinations.ts';
import { createTestDatabase, createTestPool, type TestDatabase } from '../support/database.ts';
import {
  Claimer,
  startTestWorker,
  type TestWorker,
  waitFor,
  workerConfig,
} from '../support/worker-harness.ts';

// `ordering: entity` with two relays (as two workers) sharing the database: each entity's
// deliveries arrive one at a time in version order, through a retry; an entity whose head hangs
// and then fails holds back only itself.

let db: TestDatabase;
let claimer: Claimer;
let worker: TestWorker;
let server: Server;
let url: string;
const relays: RunningDestinationRelay[] = [];
const pools: pg.Pool[] = [];
/** Each request's event id, in arrival order. */
const arrivals: string[] = [];
/** Open requests per entity right now, and the most ever seen at once. */
const open = new Map<string, number>();
let mostOpenAtOnce = 0;
let releaseHead: () => void = () => {};
const headHeld = new Promise<void>((resolve) => {
  releaseHead = resolve;
});
let headAnswered = false;

beforeAll(async () => {
  db = await createTestDatabase();
  server = createServer(async (req, res) => {
    for await (const _ of req);
    const eventId = String(req.headers['x-hookgate-event-id']);
    const entity = eventId.split('_')[0]!;
    arrivals.push(eventId);
    open.set(entity, (open.get(entity) ?? 0) + 1);
    mostOpenAtOnce = Math.max(mostOpenAtOnce, open.get(entity)!);
    let status = 200;
    // a_2's first attempt hangs until the test releases it, then fails.
    if (eventId === 'a_2' && !headAnswered) {
      await headHeld;
      headAnswered = true;
      status = 500;
    } else await new Promise((resolve) => setTimeout(resolve, 5));
    open.set(entity, open.get(entity)! - 1);
    res.writeHead(status).end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ordered`;
  const config = workerConfig({
    pay: {
      handler: 'record',
      destinations: {
        ordered: {
          url,
          ordering: 'entity',
          concurrency: 4,
          retry: { limit: 5, backoff: '100ms', max: '100ms', jitter: 0 },
        },
      },
    },
  });
  claimer = await Claimer.start(db.url, config);
  worker = await startTestWorker(db.url, config);
  for (let i = 0; i < 2; i += 1) {
    const pool = createTestPool(db.url, `relay-${i}`, 4);
    pools.push(pool);
    relays.push(
      startDestinationRelay({
        pool,
        routes: routesFrom(config),
        logger: createLogger('silent'),
        pollIntervalMs: 20,
      }),
    );
  }
});

afterAll(async () => {
  releaseHead();
  for (const relay of relays) await relay.stop();
  for (const pool of pools) await pool.end();
  await worker?.stop();
  await claimer?.stop();
  server?.closeAllConnections();
  server?.close();
  await db?.drop();
});

const statuses = async (entity: string) =>
  (
    await db.pool.query<{ event_id: string; status: string; attempts: number }>(
      `SELECT event_id, status, attempts FROM hookgate.destination_deliveries
        WHERE event_id LIKE $1 ORDER BY entity_version`,
      [`${entity}_%`],
    )
  ).rows.map((row) => `${row.event_id}:${row.status}:${row.attempts}`);

describe('ordering: entity', () => {
  it('sends each entity one at a time in version order; a failing head holds back its own entity only', async () => {
    // Claimed newest first, in one batch: the order comes from the versions, not arrival.
    const events = ['a', 'b'].flatMap((entity) =>
      [5, 4, 3, 2, 1].map((version) => ({
        eventId: `${entity}_${version}`,
        eventType: 'thing.updated',
        entityType: 'thing',
        entityId: entity,
        version,
      })),
    );
    await claimer.claim('pay', events);
    // Entity b goes through entirely while a's head (a_2) hangs.
    const allOf = async (entity: string, done: (status: string) => boolean) => {
      const found = await statuses(entity);
      return found.length === 5 && found.every(done) ? true : null;
    };
    await waitFor('entity b to be delivered', () => allOf('b', (s) => s.endsWith(':delivered:1')));
    // a_2 is in flight (its request open) before a is looked at.
    await waitFor('a_2 to be sent', async () => (arrivals.includes('a_2') ? true : null));
    expect(await statuses('a')).toEqual([
      'a_1:delivered:1',
      'a_2:sending:1',
      'a_3:pending:0',
      'a_4:pending:0',
      'a_5:pending:0',
    ]);
    releaseHead();
    await waitFor('entity a to be delivered', () => allOf('a', (s) => s.includes(':delivered:')));
    expect(await statuses('a')).toEqual([
      'a_1:delivered:1',
      'a_2:delivered:2',
      'a_3:delivered:1',
      'a_4:delivered:1',
      'a_5:delivered:1',
    ]);
    expect(arrivals.filter((id) => id.startsWith('a_'))).toEqual(['a_1', 'a_2', 'a_2', 'a_3', 'a_4', 'a_5']);
    expect(arrivals.filter((id) => id.startsWith('b_'))).toEqual(['b_1', 'b_2', 'b_3', 'b_4', 'b_5']);
    expect(mostOpenAtOnce).toBe(1);
  });
});
