import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../services/core/config/schema.ts';
import { routesFrom } from '../../services/core/destinations/routes.ts';
import { createLogger } from '../../services/core/logging.ts';
import { createDestinationSender, type DestinationSender } from '../../services/worker/destinations.ts';
import { createTestDatabase, createTestPool, type TestDatabase } from '../support/database.ts';
import { DrivenClock } from '../support/driven-clock.ts';
import {
  Claimer,
  startTestWorker,
  type TestWorker,
  waitFor,
  workerConfig,
} from '../support/worker-harness.ts';

// `ordering: entity` with two relays (as two workers, each its own pool) sharing the database,
// one pass at a time on a clock the test moves: each entity's deliveries go one at a time in
// version order, through a retry; while an entity's head is in flight (its request held open)
// or waiting for its retry, no pass of either relay takes anything else of that entity, and the
// other entity goes on.

let db: TestDatabase;
let claimer: Claimer;
let worker: TestWorker;
let server: Server;
let url: string;
let config: Config;
let clock: DrivenClock;
const senders: DestinationSender[] = [];
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
    }
    open.set(entity, open.get(entity)! - 1);
    res.writeHead(status).end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ordered`;
  config = workerConfig({
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
});

afterAll(async () => {
  releaseHead();
  for (const sender of senders) await sender.close();
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

const entityOf = (eventId: string) => eventId.split('_')[0]!;

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
    await waitFor('every delivery written', async () =>
      (await statuses('a')).length === 5 && (await statuses('b')).length === 5 ? true : null,
    );
    clock = await DrivenClock.fromDatabase(db.pool, 1_000);
    for (let i = 0; i < 2; i += 1) {
      const pool = createTestPool(db.url, `relay-${i}`, 4);
      pools.push(pool);
      senders.push(
        createDestinationSender({
          pool,
          routes: routesFrom(config),
          logger: createLogger('silent'),
          now: clock.now,
        }),
      );
    }
    const [first, second] = senders as [DestinationSender, DestinationSender];
    const pass = async (sender: DestinationSender) =>
      (await sender.runOnce('pay', 'ordered')).attempts.map((a) => `${a.eventId}:${a.status}`);

    // Each pass takes each entity's head only.
    expect((await pass(first)).sort()).toEqual(['a_1:delivered', 'b_1:delivered']);
    // a_2's request is held open: this pass does not end until it is answered.
    const held = pass(first);
    await waitFor('a_2 to be sent', async () => (arrivals.includes('a_2') ? true : null));
    await waitFor('b_2 to be delivered', async () =>
      (await statuses('b')).includes('b_2:delivered:1') ? true : null,
    );
    // Meanwhile the other relay goes through b, and takes nothing of a.
    for (const version of [3, 4, 5]) expect(await pass(second)).toEqual([`b_${version}:delivered`]);
    expect(await pass(second)).toEqual([]);
    expect(await statuses('a')).toEqual([
      'a_1:delivered:1',
      'a_2:sending:1',
      'a_3:pending:0',
      'a_4:pending:0',
      'a_5:pending:0',
    ]);
    // a_2 fails: it waits for its retry, and still holds its entity back.
    releaseHead();
    expect((await held).sort()).toEqual(['a_2:retrying', 'b_2:delivered']);
    expect(await pass(second)).toEqual([]);
    expect(await pass(first)).toEqual([]);
    // Its retry due, it goes first, then the rest of a in order.
    clock.advance(1_000);
    expect(await pass(second)).toEqual(['a_2:delivered']);
    for (const version of [3, 4, 5]) {
      expect(await pass(version % 2 === 0 ? first : second)).toEqual([`a_${version}:delivered`]);
    }
    expect(await statuses('a')).toEqual([
      'a_1:delivered:1',
      'a_2:delivered:2',
      'a_3:delivered:1',
      'a_4:delivered:1',
      'a_5:delivered:1',
    ]);
    expect(arrivals.filter((id) => entityOf(id) === 'a')).toEqual(['a_1', 'a_2', 'a_2', 'a_3', 'a_4', 'a_5']);
    expect(arrivals.filter((id) => entityOf(id) === 'b')).toEqual(['b_1', 'b_2', 'b_3', 'b_4', 'b_5']);
    expect(mostOpenAtOnce).toBe(1);
  });
});
