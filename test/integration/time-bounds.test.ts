import { createHash } from 'node:crypto';
import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningConsole, startConsole } from '../../services/console/server.ts';
import { parseConfig } from '../../services/core/config/load.ts';
import { createBoss } from '../../services/core/queue/boss.ts';
import { silentLogger } from '../support/apply.ts';
import { runCliInProcess } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { SW_SECRET } from '../support/gateway.ts';

// A time filter that names no date PostgreSQL (or JavaScript) has, such as 99999999999d ago, is
// refused with a sentence: 400 on the console's pages, exit 2 from the CLI. It used to reach
// PostgreSQL as an invalid date and come back as a 500.
const TOKEN = 'time-bounds-console-token-0123456789abcdef';

let db: TestDatabase;
let boss: PgBoss;
let running: RunningConsole;

beforeAll(async () => {
  db = await createTestDatabase();
  boss = createBoss({ connectionString: db.url, max: 2, supervise: false, applicationName: 'time-bounds' });
  boss.on('error', () => {});
  await boss.start();
  running = await startConsole({
    config: parseConfig(
      {
        endpoints: { shop: { provider: 'standard-webhooks', secrets: [SW_SECRET] } },
        console: {
          port: 0,
          sessionSecret: 'time-bounds-session-secret-0123456789abcdef',
          tokens: [{ name: 'ci', sha256: createHash('sha256').update(TOKEN).digest('hex') }],
        },
      },
      {},
    ),
    databaseUrl: db.url,
    boss,
    logger: silentLogger,
    embedded: false,
    env: {},
  });
});

afterAll(async () => {
  await running?.stop();
  await boss?.stop({ graceful: false, close: true });
  await db?.drop();
});

const page = async (path: string) => {
  const answer = await fetch(new URL(path, running.url), { headers: { authorization: `Bearer ${TOKEN}` } });
  return { status: answer.status, text: await answer.text() };
};

const OUT_OF_RANGE = ['99999999999d', '9000000000000s', '0000-12-31T00:00:00Z'];

describe('time filters outside 0001-01-01 to 9999-12-31', () => {
  it('the events page answers 400 with a sentence', async () => {
    for (const text of OUT_OF_RANGE) {
      for (const field of ['since', 'until']) {
        const answer = await page(`/events?${field}=${encodeURIComponent(text)}`);
        expect([field, text, answer.status]).toEqual([field, text, 400]);
        expect(answer.text).toContain('is not a time between 0001-01-01 and 9999-12-31');
      }
    }
    // The same page with a time it can read.
    expect((await page('/events?since=7d')).status).toBe(200);
  });

  it('the audit page answers 400 with a sentence', async () => {
    for (const text of OUT_OF_RANGE) {
      const answer = await page(`/audit?since=${encodeURIComponent(text)}`);
      expect([text, answer.status]).toEqual([text, 400]);
      expect(answer.text).toContain('between 0001-01-01 and 9999-12-31');
    }
    expect((await page('/audit?since=7d')).status).toBe(200);
  });

  it('the CLI refuses them with exit 2 and a sentence, before asking PostgreSQL', async () => {
    const env = { DATABASE_URL: db.url };
    const far = await runCliInProcess(['events', 'list', '--since', '99999999999d'], env);
    expect(far.code).toBe(2);
    expect(far.stderr).toContain('"99999999999d" ago is before 0001-01-01');
    const zero = await runCliInProcess(['events', 'list', '--until', '0000-12-31T00:00:00Z'], env);
    expect(zero.code).toBe(2);
    expect(zero.stderr).toContain('neither a duration');
    const audit = await runCliInProcess(['audit', '--since', '99999999999d'], env);
    expect(audit.code).toBe(2);
    expect(audit.stderr).toContain('ago is before 0001-01-01');
    expect((await runCliInProcess(['events', 'list', '--since', '7d'], env)).code).toBe(0);
  });
});
