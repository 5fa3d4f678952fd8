import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { demoSecretPaths, PUBLISHED_DEMO_SECRETS } from '../../services/core/config/demo-secrets.ts';
import { parseConfig } from '../../services/core/config/load.ts';
import { HookgateError } from '../../services/core/errors.ts';
import { ROOT } from '../support/process.ts';

function problem(document: unknown, env: Record<string, string | undefined> = {}): string {
  try {
    parseConfig(document, env);
  } catch (error) {
    expect(error).toBeInstanceOf(HookgateError);
    return (error as HookgateError).message;
  }
  throw new Error('expected the configuration to be refused');
}

describe('configuration: hostile or mistaken values', () => {
  it('treats ${constructor}, ${toString}, ${__proto__} and friends as unset variables', () => {
    // A plain object env is what a test passes; process.env has Object.prototype too.
    for (const env of [{}, process.env]) {
      for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf']) {
        const message = problem(
          { endpoints: { pay: { provider: 'stripe', secrets: [`\${${name}}`] } } },
          env,
        );
        expect(message).toContain(`endpoints.pay.secrets[0]: environment variable ${name} is not set`);
      }
    }
    const config = parseConfig(
      { endpoints: { pay: { provider: 'stripe', secrets: ['${toString:-fallback}'] } } },
      {},
    );
    expect(config.endpoints.pay?.secrets).toEqual(['fallback']);
  });

  it('refuses a Standard Webhooks secret that is not base64 at start, with its path', () => {
    const message = problem({
      endpoints: {
        ok: { provider: 'standard-webhooks', secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'] },
        bad: { provider: 'svix', secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'whsec_not base64!'] },
      },
    });
    expect(message).toContain('endpoints.bad.secrets[1]: is not a Standard Webhooks secret');
    expect(message).not.toContain('endpoints.ok');
    expect(message).not.toContain('whsec_not base64!');
    // Other providers use the secret as text: any text is fine.
    expect(() =>
      parseConfig({ endpoints: { s: { provider: 'stripe', secrets: ['not base64!'] } } }, {}),
    ).not.toThrow();
  });

  it('takes an IP listen address and refuses anything else', () => {
    const endpoints = { pay: { provider: 'stripe', secrets: ['whsec_x'] } };
    expect(parseConfig({ server: { listenAddress: '::1' }, endpoints }, {}).server.listenAddress).toBe('::1');
    expect(parseConfig({ endpoints }, {}).server.listenAddress).toBeUndefined();
    expect(problem({ server: { listenAddress: 'localhost' }, endpoints })).toContain(
      'server.listenAddress: must be an IP address',
    );
    // The metrics listener has its own address (loopback unless set).
    expect(
      parseConfig({ server: { metricsListenAddress: '0.0.0.0' }, endpoints }, {}).server.metricsListenAddress,
    ).toBe('0.0.0.0');
    expect(problem({ server: { metricsListenAddress: 'localhost' }, endpoints })).toContain(
      'server.metricsListenAddress: must be an IP address',
    );
  });

  it('knows every fallback secret hookgate.example.yaml publishes, and finds them in a config', () => {
    const text = readFileSync(join(ROOT, 'hookgate.example.yaml'), 'utf8');
    const fallbacks = [...text.matchAll(/\$\{[A-Z_]+:-([^}]*)\}/g)].map((m) => m[1]);
    expect(fallbacks.length).toBeGreaterThan(0);
    expect([...fallbacks].sort()).toEqual([...PUBLISHED_DEMO_SECRETS].sort());
    const config = parseConfig(
      {
        endpoints: {
          a: { provider: 'stripe', secrets: ['whsec_real', PUBLISHED_DEMO_SECRETS[1]] },
          b: { provider: 'stripe', secrets: ['whsec_real'] },
        },
      },
      {},
    );
    expect(demoSecretPaths(config)).toEqual(['endpoints.a.secrets[1]']);
  });
});
