import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { processConnections } from '../../services/core/config/connections.ts';
import { parseConfig } from '../../services/core/config/load.ts';
import { runCliInProcess } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { ROOT, runHookgate } from '../support/process.ts';

// `hookgate config check` refuses what `serve` would refuse at start, with no database; and
// `migrate --check-config` (the chart's migration hook) migrates nothing when it fails. `config
// check` runs on the real program in this process (runCliInProcess); the migration hook, as the
// chart runs it, as a real process.
const databases: TestDatabase[] = [];
afterAll(async () => {
  for (const db of databases) await db.drop();
});

function configFile(lines: readonly string[]): string {
  const file = join(mkdtempSync(join(tmpdir(), 'hookgate-config-check-')), 'hookgate.yaml');
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

const GOOD = [
  'endpoints:',
  '  stripe:',
  '    provider: stripe',
  '    secrets: ["${STRIPE_WEBHOOK_SECRET}"]',
  '  github:',
  '    provider: github',
  '    secrets: ["${GITHUB_WEBHOOK_SECRET}"]',
];
const ENV = { STRIPE_WEBHOOK_SECRET: 'whsec_check', GITHUB_WEBHOOK_SECRET: 'gh_check', DATABASE_URL: '' };

describe('hookgate config check', () => {
  it('accepts a valid file, naming its endpoints and the connections each process may open', async () => {
    const file = configFile(GOOD);
    const run = await runCliInProcess(['config', 'check', '--config', file], ENV);
    expect(run.code, run.output).toBe(0);
    expect(run.output).toContain(`${file} is valid: 2 endpoints (stripe, github).`);
    expect(run.output).toContain(
      'Environment variables its ${NAME} references need: GITHUB_WEBHOOK_SECRET, STRIPE_WEBHOOK_SECRET.',
    );
    const json = await runCliInProcess(['config', 'check', '--config', file, '--json'], ENV);
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout) as {
      connections: Record<string, number>;
      endpoints: string[];
      variables: string[];
    };
    const parsed = parseConfig(
      {
        endpoints: {
          stripe: { provider: 'stripe', secrets: ['x'] },
          github: { provider: 'github', secrets: ['y'] },
        },
      },
      {},
    );
    expect(report.endpoints).toEqual(['stripe', 'github']);
    expect(report.variables).toEqual(['GITHUB_WEBHOOK_SECRET', 'STRIPE_WEBHOOK_SECRET']);
    expect(report.connections).toEqual({
      gateway: processConnections(parsed, 'gateway'),
      worker: processConnections(parsed, 'worker'),
      all: processConnections(parsed, 'all'),
    });
  });

  it('refuses (exit 2) every problem at once, bounds in the units written', async () => {
    const file = configFile([
      'database: { poolSize: 2 }',
      'server: { bodyLimit: 2mib, maxBufferedBytes: 1mib }',
      ...GOOD,
      '    tolerance: 48h',
    ]);
    const run = await runCliInProcess(['config', 'check', '--config', file], {
      ...ENV,
      GITHUB_WEBHOOK_SECRET: undefined,
    });
    expect(run.code).toBe(2);
    expect(run.output).toContain(`hookgate: config_invalid: ${file} is not valid:`);
    for (const line of [
      'endpoints.github.tolerance: 48h is longer than the 24h maximum',
      'claim.concurrency: must be below database.poolSize (2)',
      'server.maxBufferedBytes: 1 MiB is smaller than server.bodyLimit (2 MiB)',
      'endpoints.github.secrets[0]: environment variable GITHUB_WEBHOOK_SECRET is not set',
    ]) {
      expect(run.output).toContain(line);
    }
    expect(run.output).not.toMatch(/Too big|86400000/);
  });

  it('refuses the published demo secrets when DATABASE_URL is set, as serve does', async () => {
    const example = join(ROOT, 'hookgate.example.yaml');
    expect((await runCliInProcess(['config', 'check', '--config', example], { DATABASE_URL: '' })).code).toBe(
      0,
    );
    const run = await runCliInProcess(['config', 'check', '--config', example], {
      DATABASE_URL: 'postgres://hookgate@db.example:5432/hookgate',
    });
    expect(run.code).toBe(2);
    expect(run.output).toContain('published demo secret');
    // Each endpoint's secret is named, with the variable that would replace its fallback.
    expect(run.output).toContain('endpoints.demo.secrets[0] (${DEMO_WEBHOOK_SECRET} is unset');
    expect(run.output).toContain('endpoints.stripe.secrets[0] (${STRIPE_WEBHOOK_SECRET} is unset');
    expect(run.output).toContain('Set DEMO_WEBHOOK_SECRET, STRIPE_WEBHOOK_SECRET');
  });

  it('refuses literal secrets in destinations, naming each key and never its value', async () => {
    const signing = `whsec_${Buffer.from('a literal destination secret').toString('base64')}`;
    const destination = (lines: readonly string[]) =>
      configFile([...GOOD, '    destinations:', '      ledger:', ...lines.map((line) => `        ${line}`)]);
    const literal = destination([
      'url: "https://ledger.example/in?team=payments&api_key=k3y-in-the-url"',
      `signing: { secrets: ["${signing}"] }`,
      'headers: { Authorization: "Bearer t0ken-in-the-file", X-Api-Key: k3y-in-the-file, X-Team: payments }',
    ]);
    const run = await runCliInProcess(['config', 'check', '--config', literal], ENV);
    expect(run.code).toBe(2);
    expect(run.output).toContain(`hookgate: config_invalid: ${literal} is not valid:`);
    for (const key of ['url', 'signing.secrets[0]', 'headers.Authorization', 'headers.X-Api-Key']) {
      expect(run.output).toMatch(
        new RegExp(
          `endpoints\\.github\\.destinations\\.ledger\\.${key.replace(/[.[\]]/g, '\\$&')}: .*write a reference to an environment variable, \\$\\{NAME\\}`,
        ),
      );
    }
    expect(run.output).not.toContain('X-Team');
    for (const value of [signing, 't0ken-in-the-file', 'k3y-in-the-file', 'k3y-in-the-url'])
      expect(run.output).not.toContain(value);
    const keyFile = join(mkdtempSync(join(tmpdir(), 'hookgate-config-check-')), 'api-key');
    writeFileSync(keyFile, 'k3y-from-a-file\n');
    const referenced = destination([
      'url: "https://ledger.example/in?team=payments&api_key=${LEDGER_KEY}"',
      'signing: { secrets: ["${LEDGER_SIGNING_SECRET}"] }',
      `headers: { Authorization: "Bearer \${LEDGER_TOKEN}", X-Api-Key: "\${file:${keyFile}}", X-Team: payments }`,
    ]);
    const accepted = await runCliInProcess(['config', 'check', '--config', referenced], {
      ...ENV,
      LEDGER_KEY: 'k',
      LEDGER_SIGNING_SECRET: signing,
      LEDGER_TOKEN: 't',
    });
    expect(accepted.code, accepted.output).toBe(0);
  });
});

describe('hookgate migrate --check-config', () => {
  it('migrates nothing when the configuration is refused, and migrates when it is valid', async () => {
    const db = await createTestDatabase({ migrated: false });
    databases.push(db);
    const inbox = async () =>
      (await db.pool.query(`SELECT to_regclass('hookgate.inbox') AS inbox`)).rows[0].inbox as string | null;
    const bad = configFile([...GOOD, '    tolerance: 48h']);
    const refused = await runHookgate(['migrate', '--check-config', '--config', bad], {
      env: { ...ENV, DATABASE_URL: db.url },
    });
    expect(refused.code).toBe(2);
    expect(refused.output).toContain('endpoints.github.tolerance: 48h is longer than the 24h maximum');
    expect(await inbox()).toBeNull();

    const good = configFile(GOOD);
    const applied = await runHookgate(['migrate', '--check-config', '--config', good], {
      env: { ...ENV, DATABASE_URL: db.url },
    });
    expect(applied.code, applied.output).toBe(0);
    expect(applied.output).toContain(`hookgate: ${good} is valid`);
    expect(await inbox()).toBe('hookgate.inbox');
  });
});
