import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import { HookgateError } from '../../services/core/errors.ts';

function problems(document: unknown): string[] {
  try {
    parseConfig(document, {});
  } catch (error) {
    expect(error).toBeInstanceOf(HookgateError);
    expect((error as HookgateError).code).toBe('config_invalid');
    return (error as HookgateError).message
      .split('\n')
      .slice(1)
      .map((line) => line.trim());
  }
  throw new Error('expected the configuration to be refused');
}

// One run of `hookgate serve` (or any command) must list every problem of a configuration,
// each with its full path, instead of revealing them one fix at a time.
describe('configuration problems are all reported at once', () => {
  it('field errors, cross-field rules and handler options together, each with its full path', () => {
    const lines = problems({
      sever: {},
      claim: { concurrency: 20 },
      endpoints: {
        bad_provider: { provider: 'nope', secrets: ['x'] },
        sw: { provider: 'standard-webhooks', secrets: ['not base64!'] },
        hm: { provider: 'hmac', secrets: ['s'] },
        proj: {
          provider: 'stripe',
          secrets: ['whsec_x'],
          handler: 'project',
          options: { state: 'no', extra: 1 },
        },
        bill: { provider: 'stripe', secrets: ['whsec_x'], handler: 'billing', options: { notify: 'ledger' } },
        mod: { provider: 'stripe', secrets: ['whsec_x'], handler: 'module:./x.js', options: { anything: 1 } },
      },
    });
    expect(lines).toEqual(
      expect.arrayContaining([
        'sever: unknown key',
        expect.stringMatching(/^claim\.concurrency: must be below database\.poolSize \(10\)/),
        expect.stringMatching(/^endpoints\.bad_provider\.provider: unknown provider/),
        expect.stringMatching(/^endpoints\.sw\.secrets\[0\]: is not a Standard Webhooks secret/),
        'endpoints.hm.hmac: is required when provider is hmac',
        expect.stringMatching(/^endpoints\.proj\.options\.state: must be a JSON pointer/),
        'endpoints.proj.options.extra: unknown option',
        expect.stringMatching(
          /^endpoints\.bill\.options\.notify: names destination ledger, which this endpoint does not have/,
        ),
      ]),
    );
    // module: handlers validate their own options when loaded.
    expect(lines.some((line) => line.startsWith('endpoints.mod'))).toBe(false);
    expect(lines).toHaveLength(new Set(lines).size);
  });

  it('a valid configuration with handler options still parses', () => {
    const config = parseConfig(
      {
        endpoints: {
          proj: { provider: 'stripe', secrets: ['whsec_x'], handler: 'project', options: { state: '/data' } },
        },
      },
      {},
    );
    expect(config.endpoints.proj?.options).toEqual({ state: '/data' });
  });
});

describe('malformed documents', () => {
  it('an endpoint that is not a mapping is one problem, not a crash', () => {
    expect(problems({ endpoints: { a: null, b: 'text' } })).toEqual([
      expect.stringMatching(/^endpoints\.a: /),
      expect.stringMatching(/^endpoints\.b: /),
    ]);
  });
});
