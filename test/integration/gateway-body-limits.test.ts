import { randomUUID } from 'node:crypto';
import { sign as githubSign } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, stripeEvent } from '../support/deliveries.ts';
import { STRIPE_SECRET, startTestGateway, type TestGateway } from '../support/gateway.ts';

// GitHub sends payloads up to 25 MB and never retries a refused delivery: with the server-wide
// 1 MiB default, a large push event was answered 413 and lost. Each endpoint now has its own
// limit, by default its provider's documented maximum (GitHub's and GitLab's 25 MB).
const GITHUB_SECRET = 'github-body-limit-secret';
const GITLAB_TOKEN = 'gitlab-body-limit-token';
const MIB = 1024 * 1024;

let db: TestDatabase;
let gateway: TestGateway;

beforeAll(async () => {
  db = await createTestDatabase();
  gateway = await startTestGateway(
    db.url,
    parseConfig(
      {
        claim: { maxWait: '2ms' },
        // Server defaults: bodyLimit 1 MiB, maxBufferedBytes 64 MiB. The answer's deadline and the
        // statement timeout are the longest allowed: what is tested is which sizes are taken, not
        // how fast a busy machine reads, verifies and stores 24 MiB (past the default 10 s answer
        // or 5 s statement, the answer is a 503 to retry).
        server: { requestTimeout: '300s' },
        database: { statementTimeout: '300s' },
        endpoints: {
          gh: { provider: 'github', secrets: [GITHUB_SECRET] },
          ghsmall: { provider: 'github', secrets: [GITHUB_SECRET], bodyLimit: '64kib' },
          gl: { provider: 'gitlab', secrets: [GITLAB_TOKEN] },
          pay: { provider: 'stripe', secrets: [STRIPE_SECRET] },
        },
      },
      {},
    ),
  );
}, 60_000);

afterAll(async () => {
  await gateway?.stop();
  await db?.drop();
});

/** A push event of exactly `bytes` bytes of JSON, its commits filling it, as a large push does. */
function pushOfSize(bytes: number): string {
  const commits: unknown[] = [];
  let size = JSON.stringify({ ref: 'refs/heads/main', commits: [], pad: '' }).length;
  for (let i = 0; size + 2_000 < bytes; i += 1) {
    const commit = { id: `${i}`.padStart(40, '0'), message: 'x'.repeat(900), added: [`src/file-${i}.ts`] };
    size += JSON.stringify(commit).length + 1;
    commits.push(commit);
  }
  const base = JSON.stringify({ ref: 'refs/heads/main', commits, pad: '' });
  return base.replace('"pad":""', `"pad":"${'p'.repeat(bytes - base.length)}"`);
}

async function githubDelivery(endpoint: string, body: string) {
  const id = randomUUID();
  const reply = await post(`${gateway.url}/webhooks/${endpoint}`, {
    body,
    headers: {
      'content-type': 'application/json',
      'x-github-delivery': id,
      'x-github-event': 'push',
      'x-hub-signature-256': await githubSign(GITHUB_SECRET, body),
    },
  });
  return { id, reply };
}

/** A GitLab push hook of exactly `bytes` bytes (GitLab authenticates with its token, signs nothing). */
async function gitlabDelivery(bytes: number) {
  const kind = '"object_kind":"push",';
  const body = pushOfSize(bytes - kind.length).replace('{', `{${kind}`);
  expect(Buffer.byteLength(body)).toBe(bytes);
  const id = randomUUID();
  const reply = await post(`${gateway.url}/webhooks/gl`, {
    body,
    headers: {
      'content-type': 'application/json',
      'x-gitlab-event': 'Push Hook',
      'x-gitlab-event-uuid': id,
      'x-gitlab-token': GITLAB_TOKEN,
    },
  });
  return { id, reply, body };
}

describe('per-endpoint body limits', () => {
  it('a github endpoint takes a 24 MiB push by default and stores it whole; 25 MiB + 1 byte is 413', async () => {
    const body = pushOfSize(24 * MIB);
    expect(Buffer.byteLength(body)).toBe(24 * MIB);
    const { id, reply } = await githubDelivery('gh', body);
    expect(reply.status, JSON.stringify(reply.json)).toBe(200);
    expect(reply.json.status).toBe('accepted');
    const stored = await db.pool.query(
      `SELECT jsonb_array_length(payload->'commits') AS commits FROM hookgate.inbox WHERE endpoint = 'gh' AND event_id = $1`,
      [id],
    );
    expect(stored.rows[0]?.commits).toBe(JSON.parse(body).commits.length);

    const over = await githubDelivery('gh', pushOfSize(25 * MIB + 1));
    expect(over.reply.status).toBe(413);
    expect(over.reply.json).toMatchObject({ error: 'body_too_large' });
    expect(String(over.reply.json.message)).toContain(String(25 * MIB));
  }, 120_000);

  it('a gitlab endpoint takes a push above server.bodyLimit by default (GitLab: 25 MB); 25 MiB + 1 byte is 413', async () => {
    const { id, reply, body } = await gitlabDelivery(6 * MIB);
    expect(reply.status, JSON.stringify(reply.json)).toBe(200);
    expect(reply.json.status).toBe('accepted');
    const stored = await db.pool.query(
      `SELECT event_type, jsonb_array_length(payload->'commits') AS commits FROM hookgate.inbox WHERE endpoint = 'gl' AND event_id = $1`,
      [id],
    );
    expect(stored.rows[0]).toEqual({ event_type: 'push', commits: JSON.parse(body).commits.length });

    const over = await gitlabDelivery(25 * MIB + 1);
    expect(over.reply.status).toBe(413);
    expect(over.reply.json).toMatchObject({ error: 'body_too_large' });
    expect(String(over.reply.json.message)).toContain(String(25 * MIB));
  }, 120_000);

  it("an endpoint's own bodyLimit wins over its provider's; other providers keep server.bodyLimit", async () => {
    const small = await githubDelivery('ghsmall', pushOfSize(100 * 1024));
    expect(small.reply.status).toBe(413);
    expect(String(small.reply.json.message)).toContain(String(64 * 1024));

    const stripeBody = stripeEvent(STRIPE_SECRET, {
      object: { id: 'in_big', object: 'invoice', lines: 'l'.repeat(2 * MIB) },
    });
    const refused = await post(`${gateway.url}/webhooks/pay`, stripeBody);
    expect(refused.status).toBe(413);
    expect(String(refused.json.message)).toContain(String(MIB));

    const fits = await post(`${gateway.url}/webhooks/pay`, stripeEvent(STRIPE_SECRET));
    expect(fits.status).toBe(200);
  }, 60_000);
});
