import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import { HookgateError } from '../../services/core/errors.ts';

// A destination's secrets are references in the configuration, never the secrets themselves
// (services/core/config/secret-literals.ts; the chart's values schema says the same).
const SIGNING = `whsec_${Buffer.from('a destination signing secret').toString('base64')}`;
const ENV = { SIGNING, TOKEN: 'a-token', KEY: 'a-key' };

const withDestination = (destination: Record<string, unknown>) => ({
  endpoints: {
    pay: {
      provider: 'stripe',
      secrets: ['whsec_x'],
      destinations: { ledger: { url: 'https://ledger.example/in', ...destination } },
    },
  },
});

function refusal(destination: Record<string, unknown>): string[] {
  try {
    parseConfig(withDestination(destination), ENV);
  } catch (error) {
    expect(error).toBeInstanceOf(HookgateError);
    expect((error as HookgateError).code).toBe('config_invalid');
    return (error as HookgateError).message
      .split('\n')
      .filter((line) => line.includes('write a reference'))
      .map((line) => line.trim());
  }
  return [];
}

const AT = 'endpoints.pay.destinations.ledger';

describe('literal secrets in destinations', () => {
  it('are refused in signing secrets, naming the key and saying to use ${NAME}', () => {
    const lines = refusal({ signing: { secrets: ['${SIGNING}', SIGNING] } });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^${AT}\\.signing\\.secrets\\[1\\]: is a literal signing secret; `));
    expect(lines[0]).toContain('write a reference to an environment variable, ${NAME}');
    expect(lines[0]).not.toContain(SIGNING);
  });

  it('are refused in headers named authorization, token, key, secret or password, in any case', () => {
    for (const name of ['Authorization', 'X-Auth-Token', 'x-api-key', 'X-SECRET', 'Api-Password']) {
      const lines = refusal({ headers: { [name]: 'Bearer literal-value' } });
      expect(lines, name).toEqual([
        expect.stringMatching(new RegExp(`^${AT}\\.headers\\.${name}: is a literal secret`)),
      ]);
      expect(lines[0]).not.toContain('literal-value');
    }
    // Other headers are configuration, not secrets.
    expect(refusal({ headers: { 'X-Team': 'payments', 'User-Agent-Note': 'x' } })).toEqual([]);
  });

  it('accept a reference, after an authentication scheme, from the environment or a file', () => {
    for (const value of [
      '${TOKEN}',
      'Bearer ${TOKEN}',
      'Basic   ${TOKEN}',
      'Bearer ${file:/run/secrets/token}',
    ]) {
      const lines = refusal({ headers: { Authorization: value } });
      expect(
        lines.filter((line) => line.includes('headers.Authorization: is a literal')),
        value,
      ).toEqual([]);
    }
    const config = parseConfig(
      withDestination({
        signing: { secrets: ['${SIGNING}'] },
        headers: { Authorization: 'Bearer ${TOKEN}' },
      }),
      ENV,
    );
    expect(config.endpoints.pay?.destinations?.ledger?.headers).toEqual({ Authorization: 'Bearer a-token' });
  });

  it('refuse what only looks like a reference: a fallback, an escaped ${, text around it', () => {
    for (const value of ['${TOKEN:-fallback-secret}', '$${TOKEN}', '${TOKEN}suffix', 'Bearer a ${TOKEN}']) {
      expect(refusal({ headers: { 'X-Token': value } }), value).toHaveLength(1);
    }
    expect(refusal({ signing: { secrets: ['${SIGNING:-whsec_fallback}'] } })).toHaveLength(1);
  });

  it('are refused in the URL’s query parameters named like a secret', () => {
    expect(refusal({ url: 'https://ledger.example/in?team=a&access_token=abc' })).toEqual([
      expect.stringMatching(
        new RegExp(`^${AT}\\.url: a query parameter named like a secret holds a literal value`),
      ),
    ]);
    expect(refusal({ url: 'https://ledger.example/in?API_KEY=abc#top' })).toHaveLength(1);
    expect(refusal({ url: 'https://ledger.example/in?team=a&access_token=${TOKEN}' })).toEqual([]);
    expect(refusal({ url: 'https://ledger.example/in?team=payments' })).toEqual([]);
  });
});
