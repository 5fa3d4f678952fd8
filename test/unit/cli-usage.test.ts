import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { checkSample } from '../../services/cli/commands/send-test.ts';
import { sampleDelivery } from '../../services/cli/sample-delivery.ts';
import { parseConfig } from '../../services/core/config/load.ts';
import { closest } from '../../services/core/config/suggest.ts';
import { TEST_EVENT_TYPE } from '../../services/core/handlers/test-event.ts';
import { runCliInProcess } from '../support/cli.ts';
import { ROOT } from '../support/process.ts';

// Usage and exit codes, parsed by the real command line in this process: no database is reached
// (DATABASE_URL points nowhere), so each refusal must happen before any connection.
let dir: string;
let configFile: string;
const NOWHERE = { DATABASE_URL: 'postgres://u:p@127.0.0.1:1/none', HOOKGATE_CONFIG: undefined };

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'hookgate-usage-'));
  configFile = join(dir, 'hookgate.yaml');
  writeFileSync(
    configFile,
    stringify({
      endpoints: {
        stripe: { provider: 'stripe', secrets: ['whsec_usage_test'], handler: 'billing' },
        github: { provider: 'github', secrets: ['gh_usage_test'] },
      },
    }),
  );
});

const oneLine = (output: string) => {
  const lines = output.trim().split('\n');
  expect(lines, output).toHaveLength(1);
  return lines[0]!;
};

describe('requeue', () => {
  it('without --endpoint says what is missing in a sentence, exit 2', async () => {
    const run = await runCliInProcess(['requeue', '--status', 'dead'], NOWHERE);
    expect(run.code).toBe(2);
    expect(oneLine(run.stderr)).toBe(
      `hookgate: usage_invalid: --endpoint is required: requeue moves one endpoint's events at a time (e.g. --endpoint stripe; "hookgate stats" lists the endpoints).`,
    );
    expect(run.stderr).not.toMatch(/Invalid input|expected string|received undefined/);
  });

  it('--status offers and takes only parked, dead and discarded; events list takes all seven', async () => {
    const help = await runCliInProcess(['requeue', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(
      /--status <status>\s+only this status \(choices: "parked", "dead", "discarded"\)/,
    );
    const pending = await runCliInProcess(
      ['requeue', '--endpoint', 'stripe', '--status', 'pending'],
      NOWHERE,
    );
    expect(pending.code).toBe(2);
    expect(oneLine(pending.stderr)).toMatch(
      /^hookgate: usage_invalid: .*Allowed choices are parked, dead, discarded/,
    );
    const list = await runCliInProcess(['events', 'list', '--help']);
    expect(list.stdout.replace(/\s+/g, ' ')).toContain(
      '--status <status> only this status (choices: "pending", "processed", "ignored", "stale", "parked", "dead", "discarded")',
    );
  });

  it('--orphans --dry-run is accepted (other filters with --orphans are not)', async () => {
    const dry = await runCliInProcess(
      ['requeue', '--endpoint', 'stripe', '--orphans', '--dry-run', '--config', configFile],
      NOWHERE,
    );
    // Past option checking: it reached for the database (down here), exit 1.
    expect(dry.code, dry.output).toBe(1);
    expect(dry.stderr).toMatch(/database_unreachable: cannot reach PostgreSQL at 127\.0\.0\.1:1/);
    const mixed = await runCliInProcess(
      ['requeue', '--endpoint', 'stripe', '--orphans', '--type', 'x', '--config', configFile],
      NOWHERE,
    );
    expect(mixed.code).toBe(2);
    expect(oneLine(mixed.stderr)).toBe('hookgate: usage_invalid: --type cannot be combined with --orphans.');
  });
});

describe('typos get a "did you mean"', () => {
  it('for an endpoint, in every command that takes one', async () => {
    for (const args of [
      ['requeue', '--endpoint', 'strpie'],
      ['events', 'list', '--endpoint', 'strpie'],
      ['send-test', '--endpoint', 'strpie'],
    ]) {
      const run = await runCliInProcess([...args, '--config', configFile], NOWHERE);
      expect(run.code, args.join(' ')).toBe(2);
      expect(oneLine(run.stderr)).toBe(
        'hookgate: endpoint_unknown: No endpoint named "strpie" is configured. Did you mean "stripe"? Configured: stripe, github.',
      );
    }
    const far = await runCliInProcess(['requeue', '--endpoint', 'payments', '--config', configFile], NOWHERE);
    expect(far.stderr).not.toMatch(/Did you mean/);
  });

  it('for a provider in the configuration', () => {
    expect(() =>
      parseConfig({ endpoints: { pay: { provider: 'strpie', secrets: ['whsec_x'] } } }, {}),
    ).toThrow(/endpoints\.pay\.provider: unknown provider "strpie" \(did you mean "stripe"\?\); use one of/);
    expect(() => parseConfig({ endpoints: { pay: { provider: 'githbu', secrets: ['x'] } } }, {})).toThrow(
      /unknown provider "githbu" \(did you mean "github"\?\)/,
    );
    expect(closest('zzzzzz', ['stripe', 'github'])).toBeUndefined();
    expect(closest('standard-webhook', ['standard-webhooks', 'svix'])).toBe('standard-webhooks');
  });
});

describe('config_unreadable', () => {
  it('gives the reason and the working directory', async () => {
    const missing = await runCliInProcess(['stats', '--config', 'no-such-hookgate.yaml'], NOWHERE);
    expect(missing.code).toBe(2);
    expect(oneLine(missing.stderr)).toBe(
      `hookgate: config_unreadable: Cannot read the configuration file no-such-hookgate.yaml: no such file (ENOENT) (working directory ${process.cwd()}; --config or HOOKGATE_CONFIG names another file).`,
    );
    const directory = await runCliInProcess(['stats', '--config', dir], NOWHERE);
    expect(directory.stderr).toMatch(/: it is a directory, not a file \(EISDIR\)/);
  });
});

describe('prune --batch and --pause', () => {
  it.each([
    [['--pause', '-5'], '--pause must be at least 0'],
    [['--pause', '60001'], '--pause must be at most 60000'],
    [['--pause', 'soon'], '--pause must be a number'],
    [['--pause', '2.5'], '--pause must be a whole number'],
    [['--batch', '10'], '--batch must be at least 100'],
    [['--batch', '1000000'], '--batch must be at most 100000'],
  ])('refuses %j: %s', async (flags, sentence) => {
    const run = await runCliInProcess(['prune', ...flags], NOWHERE);
    expect(run.code).toBe(2);
    expect(oneLine(run.stderr)).toBe(`hookgate: usage_invalid: ${sentence}.`);
  });

  it('takes them (and documents them in --help)', async () => {
    const run = await runCliInProcess(['prune', '--batch', '1000', '--pause', '100', '--dry-run'], NOWHERE);
    // Past option checking: it reached for the database.
    expect(run.stderr).toMatch(/database_unreachable/);
    const help = await runCliInProcess(['prune', '--help']);
    expect(help.stdout).toMatch(/--pause <ms>/);
    expect(help.stdout).toMatch(/--batch <n>/);
  });
});

describe('send-test', () => {
  it('says in --help which PORT it uses, and that --type sends a real event', async () => {
    const help = await runCliInProcess(['send-test', '--help']);
    expect(help.stdout).toMatch(/\$PORT/);
    expect(help.stdout).toMatch(/the server's\s+PORT is not read/);
    expect(help.stdout).toMatch(/hookgate\.test/);
    expect(help.stdout).toMatch(/APPLIES it/);
  });

  it('cannot reach a gateway: names the port and where it came from', async () => {
    const run = await runCliInProcess(['send-test', '--endpoint', 'github', '--config', configFile], {
      ...NOWHERE,
      PORT: '1',
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /gateway_unreachable: Cannot reach http:\/\/127\.0\.0\.1:1\/webhooks\/github \(PORT=1 from this shell\)/,
    );
  });

  it('an endpoint whose sample would not arrive as a test event: nothing sent, exit 2', async () => {
    const file = join(dir, 'untyped.yaml');
    writeFileSync(
      file,
      stringify({
        endpoints: {
          untyped: {
            provider: 'hmac',
            secrets: ['s'],
            hmac: { header: 'X-Sig', algorithm: 'sha256', encoding: 'hex', eventIdHeader: 'X-Id' },
          },
          // The type read from elsewhere in the signed body: the sample puts it there.
          'sw-extract': {
            provider: 'standard-webhooks',
            secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
            extract: { eventType: '/meta/kind' },
          },
          'stripe-extract': { provider: 'stripe', secrets: ['s'], extract: { eventType: '/kind' } },
          'paddle-extract': { provider: 'paddle', secrets: ['s'], extract: { eventType: '/meta/kind' } },
        },
      }),
    );
    const run = await runCliInProcess(['send-test', '--endpoint', 'untyped', '--config', file], {
      ...NOWHERE,
      PORT: '1',
    });
    expect(run.code).toBe(2);
    expect(oneLine(run.stderr)).toMatch(
      /^hookgate: send_test_unrecognisable: A test event for endpoint untyped would arrive as type "unknown"/,
    );
    expect(run.stdout).toBe('');
  });

  it('every provider sample arrives as the test type; one that would not is not sent', () => {
    const config = parseConfig(
      {
        endpoints: {
          sw: { provider: 'standard-webhooks', secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'] },
          svix: { provider: 'svix', secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'] },
          stripe: { provider: 'stripe', secrets: ['s'] },
          github: { provider: 'github', secrets: ['s'] },
          shopify: { provider: 'shopify', secrets: ['s'] },
          slack: { provider: 'slack', secrets: ['s'] },
          paddle: { provider: 'paddle', secrets: ['s'] },
          typed: {
            provider: 'hmac',
            secrets: ['s'],
            hmac: {
              header: 'X-Sig',
              algorithm: 'sha256',
              encoding: 'hex',
              eventIdHeader: 'X-Id',
              eventTypeHeader: 'X-Type',
            },
          },
          untyped: {
            provider: 'hmac',
            secrets: ['s'],
            hmac: { header: 'X-Sig', algorithm: 'sha256', encoding: 'hex', eventIdHeader: 'X-Id' },
          },
          // The type read from elsewhere in the signed body: the sample puts it there.
          'sw-extract': {
            provider: 'standard-webhooks',
            secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
            extract: { eventType: '/meta/kind' },
          },
          'stripe-extract': { provider: 'stripe', secrets: ['s'], extract: { eventType: '/kind' } },
          'paddle-extract': { provider: 'paddle', secrets: ['s'], extract: { eventType: '/meta/kind' } },
        },
      },
      {},
    );
    for (const [name, endpoint] of Object.entries(config.endpoints)) {
      const sample = sampleDelivery(endpoint, undefined, Date.now());
      if (name === 'untyped') {
        expect(() => checkSample(endpoint, name, sample)).toThrow(
          /send_test_unrecognisable|would arrive as type "unknown", not as hookgate\.test/,
        );
        // Sent on purpose as a real event, it is allowed.
        expect(
          checkSample(endpoint, name, sampleDelivery(endpoint, 'order.paid', Date.now()), 'order.paid'),
        ).toBe('unknown');
      } else {
        expect(checkSample(endpoint, name, sample), name).toBe(TEST_EVENT_TYPE);
      }
    }
  });
});

describe('the load driver', () => {
  it('has --help (exit 0) listing its options', async () => {
    const run = await new Promise<{ code: number; stdout: string }>((resolve) => {
      execFile(process.execPath, [join(ROOT, 'load/driver/main.ts'), '--help'], (error, stdout) =>
        resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout }),
      );
    });
    expect(run.code).toBe(0);
    for (const option of ['--url', '--target', '--rate', '--seconds', '--out', '--later-duplicates'])
      expect(run.stdout).toContain(option);
  });
});
