// The gateway's bound when PostgreSQL stops answering without a word (a partition, a dead host:
// nothing is refused, packets just go nowhere): every delivery is answered 503 within
// server.requestTimeout of its first byte, never held open until TCP gives up, never 2xx. The
// link is stalled by a relay (tcp-relay.ts), so this runs on any machine, on both majors; the
// same fault made with iptables in a network namespace is test/e2e/network-faults.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { SW_SECRET, startTestGateway, type TestGateway, testConfig } from '../support/gateway.ts';
import { startTcpRelay, type TcpRelay } from '../support/tcp-relay.ts';

const REQUEST_TIMEOUT_MS = 2_000;

let db: TestDatabase;
let relay: TcpRelay;
let gateway: TestGateway;

beforeAll(async () => {
  db = await createTestDatabase();
  const upstream = new URL(db.url);
  relay = await startTcpRelay({ host: upstream.hostname, port: Number(upstream.port) });
  const url = new URL(db.url);
  url.host = `127.0.0.1:${relay.port}`;
  // The statement timeout is longer than the request's: only the answer deadline can keep the bound.
  gateway = await startTestGateway(
    url.toString(),
    testConfig({
      server: { requestTimeout: `${REQUEST_TIMEOUT_MS}ms` },
      database: { statementTimeout: '5s', connectTimeout: '1s' },
    }),
  );
});

afterAll(async () => {
  relay?.resume();
  await gateway?.stop();
  await relay?.stop();
  await db?.drop();
});

async function timed(delivery: ReturnType<typeof standardWebhook>) {
  const started = Date.now();
  const reply = await post(`${gateway.url}/webhooks/alpha`, delivery);
  return { ...reply, ms: Date.now() - started };
}

describe('PostgreSQL silent mid-claim', () => {
  it('answers 503 within server.requestTimeout, not when TCP or the statement gives up; 200 again once it answers', async () => {
    expect((await timed(standardWebhook(SW_SECRET))).status).toBe(200);

    relay.stall();
    // Claims already in flight when the link went silent, and more arriving behind them.
    const first = Array.from({ length: 8 }, () => timed(standardWebhook(SW_SECRET)));
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const later = Array.from({ length: 8 }, () => timed(standardWebhook(SW_SECRET)));
    const replies = await Promise.all([...first, ...later]);
    for (const reply of replies) {
      expect(reply.status).toBe(503);
      expect(reply.json.error).toBe('database_unavailable');
      expect(reply.headers['retry-after']).toBe('5');
      // The deadline, plus the time a timer and a busy machine take to fire it.
      expect(reply.ms).toBeLessThan(REQUEST_TIMEOUT_MS + 750);
    }

    relay.resume();
    // Once PostgreSQL answers again (the stalled claims finish or fail first), deliveries are accepted.
    const deadline = Date.now() + 30_000;
    let status = 0;
    while (Date.now() < deadline) {
      status = (await timed(standardWebhook(SW_SECRET))).status;
      if (status === 200) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(status).toBe(200);
  });
});
