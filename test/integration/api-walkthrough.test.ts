import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import { createLogger } from '../../services/core/logging.ts';
import { startRuntime } from '../../services/runtime/runtime.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { type FakeDownstream, startFakeDownstream } from '../support/fake-downstream.ts';
import { SW_SECRET } from '../support/gateway.ts';
import { waitFor, workerConfigDocument } from '../support/worker-harness.ts';

// docs/api.md's incident ("An incident: redelivering a destination's dead deliveries"), run
// verbatim: each shell block of that section, after its first (which names the API and the token),
// runs in bash against a real hookgate (gateway, worker, destination relay and console with its
// API, startRuntime) and a real PostgreSQL, and must print exactly the text block the page shows
// after it. The ledger receiver answers 503 until the page says it is fixed.

const run = promisify(execFile);
const TOKEN = `hgt_${randomBytes(32).toString('base64url')}`;
const SECTION = '## An incident: redelivering a destination';

interface Step {
  readonly script: string;
  readonly expected: string | null;
}

/** The section's fenced blocks, dedented, each shell block with the text block after it. */
function steps(): { setup: string; steps: Step[] } {
  const page = readFileSync('docs/api.md', 'utf8');
  const start = page.indexOf(SECTION);
  expect(start).toBeGreaterThan(0);
  const end = page.indexOf('\n## ', start + SECTION.length);
  const section = page.slice(start, end);
  const blocks = [...section.matchAll(/^( *)```(sh|text)\n([\s\S]*?)^\1```$/gm)].map(
    ([, indent, kind, body]) => ({
      kind,
      body: body!
        .split('\n')
        .map((line) => line.slice(indent!.length))
        .join('\n'),
    }),
  );
  const [setup, ...rest] = blocks;
  expect(setup?.kind).toBe('sh');
  const found: Step[] = [];
  for (const [index, block] of rest.entries()) {
    if (block.kind !== 'sh') continue;
    const next = rest[index + 1];
    found.push({ script: block.body, expected: next?.kind === 'text' ? next.body : null });
  }
  return { setup: setup!.body, steps: found };
}

let db: TestDatabase;
let downstream: FakeDownstream;
let runtime: Awaited<ReturnType<typeof startRuntime>>;
let api: string;

async function deliveryStatus(eventId: string): Promise<string | undefined> {
  const { rows } = await db.pool.query<{ status: string }>(
    `SELECT status FROM hookgate.destination_deliveries WHERE event_id = $1`,
    [eventId],
  );
  return rows[0]?.status;
}

beforeAll(async () => {
  db = await createTestDatabase();
  downstream = await startFakeDownstream();
  downstream.fallback = { status: 503, body: 'ledger is restarting' };
  const document = workerConfigDocument({
    shop: {
      handler: 'record',
      destinations: { ledger: { url: `${downstream.url}/ledger`, retry: { limit: 0 } } },
    },
  });
  const config = parseConfig(
    {
      ...document,
      console: {
        port: 0,
        sessionSecret: 'api-walkthrough-test-session-secret-0123456789',
        tokens: [{ name: 'oncall', sha256: createHash('sha256').update(TOKEN).digest('hex') }],
      },
    },
    {},
  );
  runtime = await startRuntime({
    config,
    role: 'all',
    console: true,
    databaseUrl: db.url,
    databaseHost: 'the test database',
    databaseAddress: 'the test database',
    logger: createLogger('warn', 2),
    configDir: process.cwd(),
    port: 0,
    host: '127.0.0.1',
    metricsPort: 0,
    metricsHost: '127.0.0.1',
  });
  api = new URL('api/v1', runtime.console!.url).toString();
  // Three events, one at a time (so their deliveries are 1, 2, 3), each delivery dead on a 503.
  for (const n of [1001, 1002, 1003]) {
    const body = JSON.stringify({ type: 'ledger.entry', data: { id: n } });
    const reply = await post(
      `http://127.0.0.1:${runtime.port}/webhooks/shop`,
      standardWebhook(SW_SECRET, { eventId: `evt_${n}`, body }),
    );
    expect(reply.status).toBe(200);
    await waitFor(
      `evt_${n}'s delivery dead`,
      async () => (await deliveryStatus(`evt_${n}`)) === 'dead',
      60_000,
    );
  }
}, 120_000);

afterAll(async () => {
  await runtime?.stop();
  await downstream?.close();
  await db?.drop();
});

describe('docs/api.md, the incident', () => {
  it('finds the dead deliveries, dry-runs the redeliver, redelivers, and watches them deliver', async () => {
    const { setup, steps: found } = steps();
    expect(found).toHaveLength(6);
    for (const [index, step] of found.entries()) {
      // The page's "fix the cause" comes after its second step: the ledger answers again.
      if (index === 2) downstream.fallback = { status: 204 };
      const { stdout } = await run('bash', ['-c', `set -euo pipefail\n${setup}\n${step.script}`], {
        env: { ...process.env, HOOKGATE_API: api, HOOKGATE_TOKEN: TOKEN },
        timeout: 120_000,
      });
      expect([index, stdout]).toEqual([index, step.expected]);
    }
    // What the walk-through did, seen from the receiver: each delivery sent twice, with the same
    // webhook-id both times.
    const ids = downstream.requests.map((request) => request.headers['webhook-id']);
    expect(ids).toHaveLength(6);
    expect(new Set(ids).size).toBe(3);
  });
});
