import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import { routesFrom } from '../../services/core/destinations/routes.ts';
import { type RunningDestinationRelay, startDestinationRelay } from '../../services/worker/destinations.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import {
  Claimer,
  startTestWorker,
  type TestWorker,
  waitFor,
  workerConfigDocument,
} from '../support/worker-harness.ts';

// A token in a destination's URL (and its header), taken from the environment when the config
// loads, and a receiver that echoes it back in every spelling its framework may produce: decoded
// (`+` as a space), as sent, JSON-escaped, in a header. Nothing stored for the attempt (the
// delivery's last error, the attempt's error, its rendering, headers and kept bytes) and nothing
// logged holds any of them; each shows the reference it was written as. Credentials written in
// the URL itself, which fetch names when it refuses the request, are redacted too.

const TOKEN = 'ab+Cd/Ef+gh=';
const API_KEY = 'key-0123456789abcdef';
/** Every spelling of the token (and the key) a receiver sent back here. */
const SPELLINGS = ['ab+Cd/Ef+gh=', 'ab Cd/Ef gh=', 'ab+Cd\\/Ef+gh=', 'ab%2BCd%2FEf%2Bgh%3D', API_KEY];

let db: TestDatabase;
let server: Server;
let url: string;
let claimer: Claimer;
let worker: TestWorker;
let relay: RunningDestinationRelay;
const logged: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  // It echoes what it was sent: the query decoded and as sent, JSON-escaped, the authorization
  // header, and the token in a header of its own; in UTF-16, as an IIS error page would.
  server = createServer(async (req, res) => {
    for await (const _ of req);
    const query = new URL(req.url ?? '/', 'http://x').searchParams.get('token') ?? '';
    const body = `no such token: ${query} (sent as ${req.url}); ${JSON.stringify({ token: query }).replaceAll('/', '\\/')}; auth ${req.headers.authorization}`;
    res.writeHead(503, { 'content-type': 'text/plain', 'x-echo': query });
    res.end(Buffer.from(`\ufeff${body}`, 'utf16le'));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  url = `http://127.0.0.1:${port}`;
  const document = {
    pay: {
      handler: 'record',
      destinations: {
        echoing: {
          url: `${url}/in?token=\${LEDGER_TOKEN}`,
          headers: { Authorization: 'Bearer ${LEDGER_API_KEY}' },
          retry: { limit: 0 },
        },
      },
    },
  };
  const config = parseConfig(workerConfigDocument(document), {
    LEDGER_TOKEN: TOKEN,
    LEDGER_API_KEY: API_KEY,
  });
  claimer = await Claimer.start(db.url, config);
  worker = await startTestWorker(db.url, config);
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logged.push(chunk.toString('utf8'));
      done();
    },
  });
  relay = startDestinationRelay({
    pool: worker.pool,
    routes: routesFrom(config),
    logger: pino({ level: 'debug' }, sink),
    pollIntervalMs: 20,
  });
});

afterAll(async () => {
  await relay?.stop();
  await worker?.stop();
  await claimer?.stop();
  server?.closeAllConnections();
  server?.close();
  await db?.drop();
});

describe("a destination's secrets in what its receiver echoes", () => {
  it('are stored and logged only as their references, in every spelling', async () => {
    await claimer.claim('pay', [{ eventId: 'evt_echo', eventType: 'invoice.paid' }]);
    const rows = await waitFor('both deliveries to end', async () => {
      const { rows: found } = await db.pool.query<{
        destination: string;
        status: string;
        last_error: string;
      }>(`SELECT destination, status, last_error FROM hookgate.destination_deliveries ORDER BY destination`);
      return found.length === 1 && found.every((row) => row.status === 'dead') ? found : null;
    });
    // The relay's stop waits for every record and log line of the attempts in flight.
    await relay.stop();
    const { rows: attempts } = await db.pool.query<{
      destination: string;
      error: string;
      response_head: string | null;
      response_headers: string | null;
      response_bytes: Buffer | null;
    }>(
      `SELECT d.destination, a.error, a.response_head, a.response_headers, a.response_bytes
         FROM hookgate.destination_attempts a JOIN hookgate.destination_deliveries d ON d.id = a.delivery_id
        ORDER BY d.destination`,
    );
    const echoing = attempts.find((a) => a.destination === 'echoing')!;
    const bytes = echoing.response_bytes!;
    const stored = [
      ...rows.map((row) => row.last_error),
      ...attempts.flatMap((a) => [a.error, a.response_head ?? '', a.response_headers ?? '']),
      bytes.toString('utf16le'),
      bytes.toString('utf8'),
      logged.join(''),
    ];
    for (const text of stored) {
      for (const spelling of SPELLINGS) expect(text, `${spelling} in ${text}`).not.toContain(spelling);
    }
    expect(echoing.error).toContain('no such token: ${LEDGER_TOKEN} (sent as /in?token=${LEDGER_TOKEN})');
    expect(echoing.error).toContain('{"token":"${LEDGER_TOKEN}"}; auth Bearer ${LEDGER_API_KEY}');
    expect(echoing.response_headers).toContain('x-echo: ${LEDGER_TOKEN}');
    expect(bytes.subarray(2).toString('utf16le')).toMatch(/^no such token: \$\{LEDGER_TOKEN\} /);
    expect(logged.join('')).toContain('no such token: ${LEDGER_TOKEN}');
  });
});
