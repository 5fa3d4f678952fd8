import { describe, expect, it } from 'vitest';
import { createProvider, PROVIDER_NAMES, type ProviderSpec } from '../../../services/core/providers/index.ts';
import { PRESET_NAMES } from '../../../services/core/providers/presets.ts';

describe('createProvider', () => {
  it('builds every provider under its own name', () => {
    for (const name of PROVIDER_NAMES) {
      const spec: ProviderSpec =
        name === 'hmac'
          ? { provider: name, hmac: { header: 'X-Sig', algorithm: 'sha256', encoding: 'hex', prefix: '' } }
          : name === 'scheme'
            ? {
                provider: name,
                scheme: {
                  algorithm: 'hmac-sha256',
                  header: 'X-Sig',
                  encoding: 'hex',
                  content: '{body}',
                  id: 'digest',
                },
              }
            : { provider: name, url: 'https://hooks.example.com/webhooks/x' };
      expect(createProvider(spec).name).toBe(name);
    }
  });

  it('offers at least 30 providers with a scheme of their own, besides hmac and scheme', () => {
    // The hand-written seven (standard-webhooks, svix, stripe, github, shopify, slack, paddle) and the presets.
    expect(PROVIDER_NAMES.length - 2).toBeGreaterThanOrEqual(30);
    expect(PRESET_NAMES.length).toBeGreaterThanOrEqual(30);
  });

  it('refuses an hmac provider without options', () => {
    expect(() => createProvider({ provider: 'hmac' })).toThrow(/hmac options/);
  });

  it('refuses a scheme provider without options', () => {
    expect(() => createProvider({ provider: 'scheme' })).toThrow(/scheme options/);
  });
});
