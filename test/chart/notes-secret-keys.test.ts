import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { referencedVariables } from '../../services/core/config/interpolate.ts';
import { CHART, find, parseManifests, run, scenarioFile, tool } from './tools.ts';

// The keys NOTES.txt says the user's Secret must hold: the database URL's and every ${NAME} the
// configuration references, wherever it is written, computed by the chart's template walk
// (hookgate.referencedVariables) and equal to hookgate's own referencedVariables, which
// `hookgate config check` prints.
const EVERY_KIND = `
config:
  console:
    sessionSecret: "\${CONSOLE_KEY}"
    users:
      - { name: ops, passwordHash: "\${OPS_PASSWORD_HASH}" }
  endpoints:
    stripe:
      provider: stripe
      secrets: ["\${STRIPE_WEBHOOK_SECRET}"]
      replaySecrets: ["\${REPLAY_TOKEN}"]
      destinations:
        ledger:
          url: "https://ledger.example/in?team=payments&token=\${LEDGER_URL_TOKEN}"
          signing: { secrets: ["\${LEDGER_SIGNING_SECRET}"] }
          headers:
            Authorization: "Bearer \${LEDGER_TOKEN}"
            X-Team: "$\${NOT_A_REFERENCE}"
            X-Region: "\${LEDGER_REGION:-eu}"
            X-Api-Key: "\${file:/run/secrets/ledger-key}"
    tenants:
      provider: hmac
      secrets: ["\${TENANT_HMAC_SECRET}"]
      hmac: { header: X-Signature, eventIdHeader: X-Id }
      handler: "sql:SELECT app.apply($1::jsonb, \${TENANT})"
tests:
  endpoint: stripe
`;

async function install(files: readonly string[]): Promise<{ notes: string; config: unknown }> {
  const args = ['install', 'hg', CHART, '-n', 'hookgate', '--dry-run=client'];
  for (const file of files) args.push('-f', file);
  const result = await run(tool('helm'), args, { KUBECONFIG: '/dev/null' });
  expect(result.code, result.stderr).toBe(0);
  const notesAt = result.stdout.indexOf('NOTES:');
  const manifests = parseManifests(result.stdout.slice(result.stdout.indexOf('---'), notesAt));
  const data = find(manifests, 'ConfigMap', 'hg-hookgate-config').data as Record<string, string>;
  return { notes: result.stdout.slice(notesAt), config: parse(data['hookgate.yaml'] ?? '') };
}

/** The keys NOTES.txt lists under the missing Secret's warning. */
function listedKeys(notes: string): string[] {
  const block = /will not start until it exists with these keys:\n((?: {2}- .+\n)+)/.exec(notes);
  if (!block) throw new Error(`no list of keys in:\n${notes}`);
  return (block[1] ?? '')
    .trim()
    .split('\n')
    .map((line) => line.replace(/^\s*- /, ''));
}

describe("NOTES.txt: the Secret's keys", () => {
  it('are the database URL and every ${NAME} the configuration references, as hookgate reads them', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'hookgate-notes-')), 'values.yaml');
    writeFileSync(file, EVERY_KIND);
    const { notes, config } = await install([scenarioFile('existing-secret-values.yaml'), file]);
    const expected = referencedVariables(config);
    // The premise: every kind of reference is there, and what needs no key is not.
    expect(expected).toEqual([
      'CONSOLE_KEY',
      'GITHUB_WEBHOOK_SECRET',
      'LEDGER_SIGNING_SECRET',
      'LEDGER_TOKEN',
      'LEDGER_URL_TOKEN',
      'OPS_PASSWORD_HASH',
      'REPLAY_TOKEN',
      'STRIPE_WEBHOOK_SECRET',
      'TENANT',
      'TENANT_HMAC_SECRET',
    ]);
    expect(listedKeys(notes)).toEqual(['database-url', ...expected]);
  });

  it("are, for the existing-secret scenario, its endpoints' secrets", async () => {
    const { notes, config } = await install([scenarioFile('existing-secret-values.yaml')]);
    expect(referencedVariables(config)).toEqual([
      'GITHUB_WEBHOOK_SECRET',
      'STRIPE_WEBHOOK_SECRET',
      'STRIPE_WEBHOOK_SECRET_PREVIOUS',
    ]);
    expect(listedKeys(notes)).toEqual([
      'database-url',
      'GITHUB_WEBHOOK_SECRET',
      'STRIPE_WEBHOOK_SECRET',
      'STRIPE_WEBHOOK_SECRET_PREVIOUS',
    ]);
  });
});
