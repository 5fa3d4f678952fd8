import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import { runCliInProcess } from '../support/cli.ts';

// A value the environment or a file supplied may be a secret: a configuration problem never
// prints it, also when it landed in a key that is not secret (a duration, a size, a provider).
const SECRET = 'whsec_live_this_must_never_be_printed';
const dir = mkdtempSync(join(tmpdir(), 'hookgate-interpolated-'));

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function problem(document: unknown, env: Record<string, string>, files: Record<string, string> = {}): string {
  try {
    parseConfig(document, env, (file) => {
      const content = files[file];
      if (content === undefined) throw Object.assign(new Error('missing'), { code: 'ENOENT' });
      return content;
    });
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('the configuration was accepted');
}

const endpoint = (extra: Record<string, unknown>) => ({
  endpoints: { shop: { provider: 'stripe', secrets: ['whsec_test_a_real_one'], ...extra } },
});

describe('configuration problems never print an interpolated value', () => {
  it('names the reference instead of a secret that landed under a duration, a size or a provider', () => {
    const env = { STRIPE_SECRET: SECRET };
    const cases = [
      endpoint({ tolerance: '${STRIPE_SECRET}' }),
      endpoint({ bodyLimit: '${STRIPE_SECRET}' }),
      { endpoints: { shop: { provider: '${STRIPE_SECRET}', secrets: ['x'] } } },
      endpoint({ tolerance: 'prefix-${STRIPE_SECRET}-suffix' }),
    ];
    for (const document of cases) {
      const message = problem(document, env);
      expect(message).not.toContain(SECRET);
      expect(message.slice(0, 200)).not.toContain(SECRET.slice(0, 20));
      expect(message).toContain('${STRIPE_SECRET}');
    }
    // A number's key: "must be a number, not text (…)" quotes what it holds, cut at 40 characters.
    const long = `${SECRET}-and-then-some-more-of-it`;
    const number = problem(
      { database: { poolSize: '${LONG_SECRET}' }, ...endpoint({}) },
      { LONG_SECRET: long },
    );
    expect(number).toContain('database.poolSize: must be a number, not text ("${LONG_SECRET}")');
    expect(number).not.toContain(long.slice(0, 12));
    // A handler that is none of the handlers: said without quoting it.
    expect(problem(endpoint({ handler: '${STRIPE_SECRET}' }), env)).not.toContain(SECRET.slice(0, 12));
  });

  it('names the file instead of its content', () => {
    const message = problem(
      endpoint({ tolerance: '${file:/run/secrets/stripe}' }),
      {},
      {
        '/run/secrets/stripe': SECRET,
      },
    );
    expect(message).not.toContain(SECRET);
    expect(message).toContain('${file:/run/secrets/stripe}');
  });

  it('keeps a short value out of its own key’s line, and says what is wrong with it', () => {
    const message = problem(endpoint({ tolerance: '${TOLERANCE}' }), { TOLERANCE: '2y' });
    expect(message).toContain('endpoints.shop.tolerance: "${TOLERANCE}" is not a duration');
    expect(message).not.toContain('"2y"');
    const bound = problem(endpoint({ bodyLimit: '${LIMIT}' }), { LIMIT: '900mib' });
    expect(bound).toMatch(/endpoints\.shop\.bodyLimit: \$\{LIMIT\} is larger than/);
    expect(bound).not.toContain('900mib');
  });

  it('`hookgate config check` prints the reference, not the value', async () => {
    const file = join(dir, 'hookgate.yaml');
    writeFileSync(
      file,
      'endpoints:\n  shop:\n    provider: stripe\n    secrets: [whsec_test_a_real_one]\n    tolerance: ${STRIPE_SECRET}\n',
    );
    const run = await runCliInProcess(['config', 'check', '--config', file], {
      STRIPE_SECRET: SECRET,
      DATABASE_URL: undefined,
    });
    expect(run.code).toBe(2);
    expect(run.output).toContain('tolerance: "${STRIPE_SECRET}" is not a duration');
    expect(run.output).not.toContain(SECRET);
  });
});
