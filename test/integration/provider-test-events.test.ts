import { randomUUID } from 'node:crypto';
import { sign as githubSign } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import { createLogger } from '../../services/core/logging.ts';
import { type Runtime, startRuntime } from '../../services/runtime/runtime.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post } from '../support/deliveries.ts';
import { waitFor } from '../support/worker-harness.ts';

// A new GitHub webhook's first delivery is `ping`. Whatever the endpoint's handler, a provider's
// own test event settles `ignored` with no business write, as hookgate's `hookgate.test` does:
// with `handler: project` it used to end `dead` (projection_unkeyed) and page someone on day one.
const GITHUB_SECRET = 'github-secret-for-ping-tests';

let db: TestDatabase;
let runtime: Runtime;
let url: string;

beforeAll(async () => {
  db = await createTestDatabase();
  const github = { provider: 'github', secrets: [GITHUB_SECRET] };
  const config = parseConfig(
    {
      claim: { maxWait: '2ms' },
      worker: { pollingInterval: '1s' },
      endpoints: {
        proj: { ...github, handler: 'project' },
        bill: { ...github, handler: 'billing' },
        rec: { ...github, handler: 'record' },
      },
    },
    {},
  );
  runtime = await startRuntime({
    config,
    role: 'all',
    databaseUrl: db.url,
    databaseHost: 'the test database',
    databaseAddress: 'the test database',
    logger: createLogger('silent'),
    configDir: process.cwd(),
    port: 0,
    host: '127.0.0.1',
    metricsPort: 0,
    metricsHost: '127.0.0.1',
  });
  url = `http://127.0.0.1:${runtime.port}`;
});

afterAll(async () => {
  await runtime?.stop();
  await db?.drop();
});

async function deliver(endpoint: string, event: string, payload: unknown) {
  const body = JSON.stringify(payload);
  const answer = await post(`${url}/webhooks/${endpoint}`, {
    body,
    headers: {
      'content-type': 'application/json',
      'x-hub-signature-256': await githubSign(GITHUB_SECRET, body),
      'x-github-delivery': randomUUID(),
      'x-github-event': event,
    },
  });
  expect(answer.status).toBe(200);
}

describe("providers' own test events", () => {
  it("GitHub's ping settles ignored on every handler; a real event on the same endpoint does not", async () => {
    const ping = {
      zen: 'Keep it logically awesome.',
      hook_id: 1,
      hook: { type: 'Repository', events: ['push'] },
    };
    for (const endpoint of ['proj', 'bill', 'rec']) await deliver(endpoint, 'ping', ping);
    // A real event a projection cannot key still ends as it always did: only test events are exempt.
    await deliver('proj', 'issues', { action: 'opened', issue: { number: 1 } });
    const rows = await waitFor('every event settled', async () => {
      const result = await db.pool.query<{ endpoint: string; event_type: string; status: string }>(
        `SELECT endpoint, event_type, status FROM hookgate.inbox ORDER BY endpoint, event_type`,
      );
      return result.rows.length === 4 && result.rows.every((row) => row.status !== 'pending')
        ? result.rows
        : undefined;
    });
    expect(rows).toEqual([
      { endpoint: 'bill', event_type: 'ping', status: 'ignored' },
      { endpoint: 'proj', event_type: 'issues.opened', status: 'dead' },
      { endpoint: 'proj', event_type: 'ping', status: 'ignored' },
      { endpoint: 'rec', event_type: 'ping', status: 'ignored' },
    ]);
    const state = await db.pool.query('SELECT count(*)::int AS n FROM hookgate.entity_state');
    expect(state.rows[0].n).toBe(0);
  });
});
