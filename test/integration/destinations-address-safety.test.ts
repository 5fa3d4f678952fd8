import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Routes, routesFrom } from '../../services/core/destinations/routes.ts';
import { createLogger } from '../../services/core/logging.ts';
import { type RunningDestinationRelay, startDestinationRelay } from '../../services/worker/destinations.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { type FakeDownstream, startFakeDownstream } from '../support/fake-downstream.ts';
import {
  Claimer,
  startTestWorker,
  type TestWorker,
  waitFor,
  workerConfig,
} from '../support/worker-harness.ts';

// relay.allowedDestinations against a real HTTP server on 127.0.0.1: the check is on the address
// each connection goes to, so a name resolving to loopback (`localhost`) is refused like the
// address itself, and a refusal is dead at once, with nothing sent.

const RETRY = { limit: 3, backoff: '100ms', max: '100ms', jitter: 0 };

let db: TestDatabase;
let downstream: FakeDownstream;
let claimer: Claimer;
let worker: TestWorker;
const relays: RunningDestinationRelay[] = [];

function only(routes: Routes, endpoint: string): Routes {
  return new Map([[endpoint, routes.get(endpoint) ?? []]]);
}

async function delivery(endpoint: string, destination: string) {
  const { rows } = await db.pool.query<{ status: string; attempts: number; last_error: string | null }>(
    `SELECT status, attempts, last_error FROM hookgate.destination_deliveries
      WHERE endpoint = $1 AND destination = $2`,
    [endpoint, destination],
  );
  return rows[0] ?? null;
}

beforeAll(async () => {
  db = await createTestDatabase();
  downstream = await startFakeDownstream();
  const port = new URL(downstream.url).port;
  const pair = (prefix: string) => ({
    ip: { url: `http://127.0.0.1:${port}/${prefix}-ip`, retry: RETRY },
    named: { url: `http://localhost:${port}/${prefix}-named`, retry: RETRY },
  });
  const endpoints = {
    guarded: { handler: 'record', destinations: pair('guarded') },
    allowed: { handler: 'record', destinations: pair('allowed') },
  };
  const config = workerConfig(endpoints);
  const routes = routesFrom(config);
  claimer = await Claimer.start(db.url, config);
  worker = await startTestWorker(db.url, config);
  const relay = (endpoint: string, allowedDestinations: readonly string[]) =>
    startDestinationRelay({
      pool: worker.pool,
      routes: only(routes, endpoint),
      logger: createLogger('silent'),
      pollIntervalMs: 50,
      allowedDestinations,
    });
  // A host entry for `localhost` does not open loopback: only a CIDR entry covering it does.
  relays.push(relay('guarded', ['localhost', '203.0.113.0/24', '*.example.com']));
  relays.push(relay('allowed', ['127.0.0.0/8', '::1/128']));
});

afterAll(async () => {
  for (const relay of relays) await relay.stop();
  await worker?.stop();
  await claimer?.stop();
  await downstream?.close();
  await db?.drop();
});

describe('relay.allowedDestinations', () => {
  it('refuses loopback by address and by a name resolving to it (dead at once, nothing sent); delivers where a CIDR allows it', async () => {
    await claimer.claim('guarded', [{ eventId: 'evt_g', eventType: 'invoice.paid', body: { id: 'evt_g' } }]);
    await claimer.claim('allowed', [{ eventId: 'evt_a', eventType: 'invoice.paid', body: { id: 'evt_a' } }]);
    const settled = await waitFor('all four deliveries to settle', async () => {
      const rows = await Promise.all([
        delivery('guarded', 'ip'),
        delivery('guarded', 'named'),
        delivery('allowed', 'ip'),
        delivery('allowed', 'named'),
      ]);
      return rows.every((row) => row?.status === 'dead' || row?.status === 'delivered') ? rows : null;
    });
    const [guardedIp, guardedNamed, allowedIp, allowedNamed] = settled;

    // Refused: dead on the first attempt (no retry spent), the reason naming the address and rule.
    expect(guardedIp).toMatchObject({ status: 'dead', attempts: 1 });
    expect(guardedIp?.last_error).toBe(
      'destination_address_refused: the address 127.0.0.1 is loopback (127.0.0.0/8), which relay.allowedDestinations allows only by a CIDR entry covering it',
    );
    expect(guardedNamed).toMatchObject({ status: 'dead', attempts: 1 });
    expect(guardedNamed?.last_error).toMatch(
      /^destination_address_refused: the address (127\.0\.0\.1|::1) \(of localhost\) is loopback \((127\.0\.0\.0\/8|::1\/128)\), which relay\.allowedDestinations allows only by a CIDR entry covering it$/,
    );
    const attempts = await db.pool.query<{
      destination: string;
      error: string | null;
      http_status: number | null;
    }>(
      `SELECT d.destination, a.error, a.http_status FROM hookgate.destination_attempts a
         JOIN hookgate.destination_deliveries d ON d.id = a.delivery_id
        WHERE d.endpoint = 'guarded' ORDER BY d.destination`,
    );
    expect(attempts.rows.map((row) => [row.destination, row.http_status])).toEqual([
      ['ip', null],
      ['named', null],
    ]);
    expect(attempts.rows[0]?.error).toBe(guardedIp?.last_error);

    // Allowed by CIDR: delivered, by address and by name.
    expect(allowedIp).toMatchObject({ status: 'delivered', attempts: 1 });
    expect(allowedNamed).toMatchObject({ status: 'delivered', attempts: 1 });
    const paths = downstream.requests.map((request) => request.path).sort();
    expect(paths).toEqual(['/allowed-ip', '/allowed-named']);
  });
});
