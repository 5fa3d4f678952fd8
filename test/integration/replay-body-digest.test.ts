import { randomUUID } from 'node:crypto';
import { sign as githubSign } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../services/core/config/schema.ts';
import { githubReplaySource } from '../../services/core/replay/github.ts';
import { replayEvents } from '../../services/core/replay/run.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post } from '../support/deliveries.ts';
import {
  type FakeApi,
  type GithubDelivery,
  startFakeGithubDeliveries,
} from '../support/fake-provider-apis.ts';
import { startTestGateway, type TestGateway, testConfig } from '../support/gateway.ts';
import { Claimer } from '../support/worker-harness.ts';

// GitHub's delivery id (X-GitHub-Delivery) is an unsigned header, so the inbox also
// deduplicates on a digest of the body. `hookgate replay` gets the body back from GitHub's API
// as parsed JSON, never the bytes that were delivered: both paths must reach the same digest,
// or a captured genuine delivery posted under a made-up id is a second event beside the
// replayed one (and each is applied: a forward endpoint posted it downstream twice).
const SECRET = 'github-secret-for-replay-digest-tests';
const REPOSITORY = 'acme/shop';
const HOOK_ID = 7;

let db: TestDatabase;
let gateway: TestGateway;
let claimer: Claimer;
let config: Config;
const apis: FakeApi[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  config = testConfig({ endpoints: { gh: { provider: 'github', secrets: [SECRET] } } });
  gateway = await startTestGateway(db.url, config);
  claimer = await Claimer.start(db.url, config);
});

afterAll(async () => {
  await Promise.all(apis.map((api) => api.close()));
  await claimer?.stop();
  await gateway?.stop();
  await db?.drop();
});

/**
 * The bytes GitHub delivered for `payload`: the same JSON value as the API's copy, spelled
 * differently (spacing, escapes), as a raw-byte digest would see it.
 */
function deliveredBytes(payload: Record<string, unknown>): string {
  return JSON.stringify(payload, null, 1).replace(/é/g, '\\u00e9').replace(/\//g, '\\/');
}

async function postToGateway(body: string, deliveryId: string) {
  return post(`${gateway.url}/webhooks/gh`, {
    body,
    headers: {
      'content-type': 'application/json',
      'x-hub-signature-256': await githubSign(SECRET, body),
      'x-github-delivery': deliveryId,
      'x-github-event': 'issues',
    },
  });
}

async function replay(delivery: GithubDelivery, dryRun = false) {
  const api = await startFakeGithubDeliveries(REPOSITORY, HOOK_ID, [delivery]);
  apis.push(api);
  const source = githubReplaySource({
    token: 't',
    apiBase: api.url,
    webhook: { kind: 'repository', repository: REPOSITORY, hookId: HOOK_ID },
  });
  const window = { since: new Date(Date.now() - 3_600_000), until: new Date(Date.now() + 1_000) };
  return replayEvents(
    claimer.pool,
    dryRun ? null : claimer.boss,
    'gh',
    config.endpoints.gh!,
    source,
    window,
    {
      dryRun,
      actor: 'test',
      horizonMs: config.dedupe.horizon,
    },
  );
}

async function rowsOf(issue: number) {
  const result = await db.pool.query<{ event_id: string; received_via: string | null }>(
    `SELECT event_id, received_via FROM hookgate.inbox
      WHERE endpoint = 'gh' AND (payload #>> '{issue,number}')::int = $1 ORDER BY received_at`,
    [issue],
  );
  return result.rows;
}

function issuePayload(issue: number) {
  return { action: 'opened', issue: { number: issue, title: `café / ${issue}` }, repository: { id: 1 } };
}

function delivery(guid: string, payload: Record<string, unknown>): GithubDelivery {
  return { id: 100, guid, deliveredAt: new Date(), event: 'issues', action: 'opened', payload };
}

describe('GitHub: a replayed event and a captured delivery of it under a made-up id are one event', () => {
  it('replay first, then the captured body under a made-up delivery id: duplicate', async () => {
    const guid = randomUUID();
    const payload = issuePayload(1);
    const report = await replay(delivery(guid, payload));
    expect(report).toMatchObject({ fetched: 1, new: 1, alreadyPresent: 0 });
    const forged = await postToGateway(deliveredBytes(payload), `made-up-${randomUUID()}`);
    expect([forged.status, forged.json.status]).toEqual([200, 'duplicate']);
    expect(await rowsOf(1)).toEqual([{ event_id: guid, received_via: 'api_replay' }]);
  });

  it('the captured body under a made-up delivery id first, then the replay: already present', async () => {
    const guid = randomUUID();
    const madeUp = `made-up-${randomUUID()}`;
    const payload = issuePayload(2);
    const first = await postToGateway(deliveredBytes(payload), madeUp);
    expect([first.status, first.json.status]).toEqual([200, 'accepted']);
    // The dry run counts it the way the real run then absorbs it.
    expect(await replay(delivery(guid, payload), true)).toMatchObject({
      fetched: 1,
      new: 0,
      alreadyPresent: 1,
    });
    expect(await replay(delivery(guid, payload))).toMatchObject({ fetched: 1, new: 0, alreadyPresent: 1 });
    expect(await rowsOf(2)).toEqual([{ event_id: madeUp, received_via: null }]);
  });

  it('a genuinely different body is still a new event on either path', async () => {
    const first = await postToGateway(deliveredBytes(issuePayload(3)), randomUUID());
    expect(first.json.status).toBe('accepted');
    const report = await replay(delivery(randomUUID(), { ...issuePayload(3), action: 'closed' }));
    expect(report).toMatchObject({ new: 1, alreadyPresent: 0 });
    expect(await rowsOf(3)).toHaveLength(2);
  });
});
