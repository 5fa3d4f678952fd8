import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimGate } from '../support/claims.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, type Reply, standardWebhook } from '../support/deliveries.ts';
import { SW_SECRET, startTestGateway, type TestGateway, testConfig } from '../support/gateway.ts';

// Bodies are bounded in bytes as well as in count: a claim statement carries at most
// claim.maxBatchBytes of them, and the gateway holds at most server.maxBufferedBytes of them
// at once (being read, waiting for a claim, in one). Counts alone let 200 one-MiB bodies share
// one statement, 5 000 of them wait in a pod with a 512 MiB limit, and any number of slow
// clients make the gateway hold a body each before a signature can be checked.

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});

afterAll(async () => {
  await db?.drop();
});

/** A signed delivery whose body is about `bytes` long. */
const sized = (bytes: number, eventId?: string) =>
  standardWebhook(SW_SECRET, {
    ...(eventId ? { eventId } : {}),
    data: { id: 'thing_1', filler: 'x'.repeat(bytes) },
  });

/** What the gateway's hookgate_gateway_body_bytes gauge says now. */
async function heldBodyBytes(gateway: TestGateway): Promise<number> {
  const text = await gateway.registry.getSingleMetricAsString('hookgate_gateway_body_bytes');
  return Number(/hookgate_gateway_body_bytes (\d+)/.exec(text)?.[1]);
}

async function stored(eventIds: readonly string[]): Promise<string[]> {
  const { rows } = await db.pool.query<{ event_id: string }>(
    'SELECT event_id FROM hookgate.inbox WHERE event_id = ANY($1) ORDER BY event_id',
    [eventIds],
  );
  return rows.map((row) => row.event_id);
}

describe('claim.maxBatchBytes', { timeout: 30_000 }, () => {
  let gateway: TestGateway;

  beforeAll(async () => {
    // One claim at a time, each waiting long enough for a burst to gather behind it.
    gateway = await startTestGateway(
      db.url,
      testConfig({ claim: { maxWait: '300ms', concurrency: 1, maxBatchBytes: '64kib' } }),
    );
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  /** Claim transactions and deliveries claimed so far (the claim batch histogram). */
  async function claimed(): Promise<{ batches: number; deliveries: number }> {
    const text = await gateway.registry.getSingleMetricAsString('hookgate_claim_batch_size');
    return {
      batches: Number(/hookgate_claim_batch_size_count (\d+)/.exec(text)?.[1] ?? 0),
      deliveries: Number(/hookgate_claim_batch_size_sum (\d+)/.exec(text)?.[1] ?? 0),
    };
  }

  const burst = async (deliveries: ReturnType<typeof sized>[]) => {
    const before = await claimed();
    const replies = await Promise.all(deliveries.map((d) => post(`${gateway.url}/webhooks/beta`, d)));
    expect(replies.map((r) => r.json.status)).toEqual(deliveries.map(() => 'accepted'));
    expect(await stored(deliveries.map((d) => d.eventId))).toEqual(deliveries.map((d) => d.eventId).sort());
    const after = await claimed();
    return { batches: after.batches - before.batches, deliveries: after.deliveries - before.deliveries };
  };

  it('shares a claim among small deliveries that arrive together', async () => {
    const { batches, deliveries } = await burst(Array.from({ length: 8 }, () => sized(1_000)));
    expect(deliveries).toBe(8);
    expect(batches).toBeLessThan(8);
  });

  it('never puts more than maxBatchBytes of bodies in one claim: larger ones are claimed one by one', async () => {
    // Two of these weigh more than 64 KiB together.
    const { batches, deliveries } = await burst(Array.from({ length: 6 }, () => sized(40_000)));
    expect(deliveries).toBe(6);
    expect(batches).toBe(6);
  });

  it('claims a body larger than maxBatchBytes by itself instead of refusing it', async () => {
    const { batches, deliveries } = await burst([sized(100_000), sized(500)]);
    expect([batches, deliveries]).toEqual([2, 2]);
  });
});

describe('server.maxBufferedBytes', { timeout: 30_000 }, () => {
  let gateway: TestGateway;
  /** Holds the one commit slot while the claim of event `hold` is open. */
  const { hooks, holding, release } = claimGate('hold');

  beforeAll(async () => {
    gateway = await startTestGateway(
      db.url,
      testConfig({ claim: { maxWait: '2ms', concurrency: 1 }, server: { maxBufferedBytes: '1mib' } }),
      hooks,
    );
  });

  afterAll(async () => {
    release();
    await gateway?.stop();
  });

  it('refuses at once with 503 overloaded what would take the bodies held past it while claims wait, and commits the rest', async () => {
    const first = post(`${gateway.url}/webhooks/beta`, sized(100, 'hold'));
    await holding;

    // 300 KB each: three fit in 1 MiB, the other two do not.
    const heavy = Array.from({ length: 5 }, () => sized(300_000));
    const answered: { eventId: string; reply: Reply }[] = [];
    const replies = heavy.map((delivery) =>
      post(`${gateway.url}/webhooks/beta`, delivery).then((reply) => {
        answered.push({ eventId: delivery.eventId, reply });
        return reply;
      }),
    );
    // The refusals come while the slot is still held: nothing was waited for.
    const deadline = Date.now() + 10_000;
    while (answered.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(answered.map(({ reply }) => [reply.status, reply.json.error])).toEqual([
      [503, 'overloaded'],
      [503, 'overloaded'],
    ]);
    // docs/gateway.md: a 503 says when to come back, 5 s.
    expect(answered.map(({ reply }) => reply.headers['retry-after'])).toEqual(['5', '5']);

    release();
    expect((await first).status).toBe(200);
    await Promise.all(replies);
    const refused = answered.slice(0, 2).map((a) => a.eventId);
    const accepted = heavy.map((d) => d.eventId).filter((id) => !refused.includes(id));
    expect(accepted).toHaveLength(3);
    // Acknowledged means committed; refused means nothing stored.
    expect(await stored([...accepted, ...refused])).toEqual([...accepted].sort());
  });
});

describe('server.maxBufferedBytes against slow bodies', { timeout: 30_000 }, () => {
  let gateway: TestGateway;

  beforeAll(async () => {
    gateway = await startTestGateway(
      db.url,
      testConfig({ server: { maxBufferedBytes: '1mib', requestTimeout: '2s' } }),
    );
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  const bufferedBytes = () => heldBodyBytes(gateway);

  /** A client that sends headers and the start of a body, then nothing: what it got back. */
  function stall(headers: string, start: string): { socket: Socket; answer: Promise<string> } {
    const { port } = new URL(gateway.url);
    const socket = connect(Number(port), '127.0.0.1');
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      text += chunk;
    });
    socket.on('error', () => {});
    socket.write(
      `POST /webhooks/beta HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n${headers}\r\n${start}`,
    );
    return { socket, answer: new Promise((resolve) => socket.on('close', () => resolve(text))) };
  }

  it('holds no more than it for clients that never finish their bodies, refusing before reading', async () => {
    // Two declared bodies of 300 KB and a chunked one that has sent 350 KB: 950 KB held.
    const slow = [
      stall('content-length: 300000\r\n', '{"a":"'),
      stall('content-length: 300000\r\n', '{"a":"'),
      stall('transfer-encoding: chunked\r\n', `55730\r\n{"a":"${'x'.repeat(350_000 - 6)}\r\n`),
    ];
    const deadline = Date.now() + 5_000;
    while ((await bufferedBytes()) < 950_000 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    expect(await bufferedBytes()).toBe(950_000);

    // Signed and valid, but 300 KB more does not fit: refused at once, nothing stored.
    const large = sized(300_000);
    const refused = await post(`${gateway.url}/webhooks/beta`, large);
    expect([refused.status, refused.json.error]).toEqual([503, 'overloaded']);
    // A small one still fits.
    const small = sized(1_000);
    expect((await post(`${gateway.url}/webhooks/beta`, small)).json.status).toBe('accepted');

    // The stalled requests time out (408) and give their bytes back; the large one then fits.
    for (const { answer } of slow) expect(await answer).toMatch(/^HTTP\/1\.1 408 /);
    // Given back once the gateway has seen each connection end (a moment after the client does).
    const end = Date.now() + 5_000;
    while ((await bufferedBytes()) > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    expect(await bufferedBytes()).toBe(0);
    expect((await post(`${gateway.url}/webhooks/beta`, large)).json.status).toBe('accepted');
    expect(await stored([large.eventId, small.eventId])).toEqual([large.eventId, small.eventId].sort());
    expect(await bufferedBytes()).toBe(0);
  });
});

describe('server.maxBufferedBytes when the client leaves while its claim waits', { timeout: 30_000 }, () => {
  let gateway: TestGateway;
  const { hooks, holding, release } = claimGate('hold-2');

  beforeAll(async () => {
    gateway = await startTestGateway(
      db.url,
      testConfig({ claim: { maxWait: '2ms', concurrency: 1 }, server: { maxBufferedBytes: '1mib' } }),
      hooks,
    );
  });

  afterAll(async () => {
    release();
    await gateway?.stop();
  });

  const bufferedBytes = () => heldBodyBytes(gateway);

  it('keeps counting a body whose client left until its claim is done with it', async () => {
    const first = post(`${gateway.url}/webhooks/beta`, sized(100, 'hold-2'));
    await holding;
    const before = await bufferedBytes();

    // A whole signed delivery, then the client hangs up while its claim waits for the slot.
    const delivery = sized(300_000);
    const { port } = new URL(gateway.url);
    const socket = connect(Number(port), '127.0.0.1');
    socket.on('error', () => {});
    const head = Object.entries(delivery.headers)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('');
    socket.write(
      `POST /webhooks/beta HTTP/1.1\r\nhost: 127.0.0.1\r\n${head}content-length: ${Buffer.byteLength(delivery.body)}\r\n\r\n${delivery.body}`,
    );
    const size = Buffer.byteLength(delivery.body);
    const deadline = Date.now() + 5_000;
    while ((await bufferedBytes()) < before + size && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    // Read, verified and queued behind the held claim: now the client leaves.
    await new Promise((r) => setTimeout(r, 200));
    socket.destroy();
    await new Promise((r) => setTimeout(r, 300));
    // Its body still waits in the claim queue, so it still counts.
    expect(await bufferedBytes()).toBe(before + size);

    release();
    expect((await first).status).toBe(200);
    const end = Date.now() + 5_000;
    while ((await bufferedBytes()) > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    expect(await bufferedBytes()).toBe(0);
  });
});
