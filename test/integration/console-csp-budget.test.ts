import { Writable } from 'node:stream';
import type { PgBoss } from 'pg-boss';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CSP_REPORT_LIMITS, ReportBudget } from '../../services/console/security/csp-reports.ts';
import { type RunningConsole, startConsole } from '../../services/console/server.ts';
import { parseConfig } from '../../services/core/config/load.ts';
import { createBoss } from '../../services/core/queue/boss.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { SW_SECRET } from '../support/gateway.ts';

// Anyone who reaches the console can post policy reports. One source floods the endpoint: it is
// logged a few times, the rest is counted as dropped, and a real browser's report from elsewhere
// is still logged. Over HTTP against a console on a real port, its log lines read back.
let db: TestDatabase;
let boss: PgBoss;
let running: RunningConsole;
const lines: Array<Record<string, unknown>> = [];

beforeAll(async () => {
  db = await createTestDatabase();
  boss = createBoss({ connectionString: db.url, max: 2, supervise: false, applicationName: 'csp-budget' });
  boss.on('error', () => {});
  await boss.start();
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  running = await startConsole({
    config: parseConfig(
      {
        endpoints: { shop: { provider: 'standard-webhooks', secrets: [SW_SECRET] } },
        // Behind one proxy: X-Forwarded-For tells the sources apart.
        console: {
          port: 0,
          sessionSecret: 'csp-budget-session-secret-0123456789abcdef',
          trustedProxyHops: 1,
          tokens: [{ name: 'ci', sha256: 'a'.repeat(64) }],
        },
      },
      {},
    ),
    databaseUrl: db.url,
    boss,
    logger: pino({ level: 'info' }, sink),
    embedded: false,
    env: {},
  });
});

afterAll(async () => {
  await running?.stop();
  await boss?.stop({ graceful: false, close: true });
  await db?.drop();
});

const report = (blocked: string) => ({
  'csp-report': { 'violated-directive': 'script-src', 'blocked-uri': blocked, 'document-uri': '/events' },
});

async function send(source: string, body: unknown): Promise<number> {
  const answer = await fetch(new URL('/csp-report', running.url), {
    method: 'POST',
    headers: { 'content-type': 'application/csp-report', 'x-forwarded-for': source },
    body: JSON.stringify(body),
  });
  return answer.status;
}

const violations = (blocked: string) =>
  lines.filter(
    (line) => line.msg === 'console: content security policy violation' && line.blocked === blocked,
  );

describe('the policy-report log budget', () => {
  it('logs a flooding source a few times and a real report from another source still', async () => {
    for (let n = 0; n < 40; n += 1)
      expect(await send('203.0.113.66', report('https://flood.example/'))).toBe(204);
    expect(
      await send(
        '203.0.113.66',
        Array.from({ length: 50 }, () => report('https://flood.example/')),
      ),
    ).toBe(204);
    expect(await send('198.51.100.7', report('https://real.example/injected.js'))).toBe(204);
    expect(violations('https://flood.example/')).toHaveLength(CSP_REPORT_LIMITS.perSource);
    expect(violations('https://real.example/injected.js')).toEqual([
      expect.objectContaining({ source: '198.51.100.7', directive: 'script-src', page: '/events' }),
    ]);
  });
});

describe('ReportBudget', () => {
  const limits = { overall: 4, perSource: 2, windowMs: 60_000, maxSources: 3 } as const;

  it('bounds each source and all together within a window, and counts what it left out', () => {
    const budget = new ReportBudget(limits);
    const at = 120_000;
    expect([1, 2, 3].map(() => budget.take('a', at).log)).toEqual([true, true, false]);
    expect(budget.take('b', at).log).toBe(true);
    expect(budget.take('c', at).log).toBe(true);
    // The overall allowance is spent: even a new source waits for the next window.
    expect(budget.take('d', at + 1).log).toBe(false);
    // The next window logs again, and says how many were left out in the last one.
    expect(budget.take('a', at + 60_000)).toEqual({ log: true, closed: 2 });
    expect(budget.take('a', at + 60_001)).toEqual({ log: true, closed: 0 });
  });

  it('lets sources beyond the ones it tracks share one allowance', () => {
    const budget = new ReportBudget({ ...limits, overall: 10 });
    for (const source of ['a', 'b', 'c']) expect(budget.take(source, 0).log).toBe(true);
    expect(['d', 'e', 'f', 'a'].map((source) => budget.take(source, 0).log)).toEqual([
      true,
      true,
      false,
      true,
    ]);
  });
});
