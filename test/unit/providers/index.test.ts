import { describe, expect, it } from 'vitest';
import { createProvider, PROVIDER_NAMES } from '../../../services/core/providers/index.ts';

describe('createProvider', () => {
  it('builds every provider under its own name', () => {
    for (const name of PROVIDER_NAMES) {
      const spec =
        name === 'hmac'
          ? {
              provider: name,
              hmac: { header: 'X-Sig', algorithm: 'sha256', encoding: 'hex', prefix: '' } as const,
            }
          : { provider: name };
      expect(createProvider(spec).name).toBe(name);
    }
  });

  it('refuses an hmac provider without options', () => {
    expect(() => createProvider({ provider: 'hmac' })).toThrow(/hmac options/);
  });
});
