import { describe, expect, it } from 'vitest';
import { createProvider, type ProviderSpec } from '../../../services/core/providers/index.ts';
import {
  bodySignature,
  FUZZ_HMAC,
  FUZZ_SECRETS,
  FUZZ_URL,
  type FuzzProvider,
  signatureHeaders,
} from '../../support/sign.ts';
import { NOW_MS, NOW_S } from './fixtures.ts';

// The fuzz suite's deliveries are all refused, so a signer that signed wrongly would pass it
// with nothing but 401s. This is its positive control: what each signer signs, the provider accepts.
const PROVIDERS = Object.keys(FUZZ_SECRETS) as FuzzProvider[];

describe('the fuzz signers sign what the providers accept', () => {
  it.each(PROVIDERS)('%s', (provider) => {
    const input = { secret: FUZZ_SECRETS[provider], timestamp: NOW_S, id: 'msg_control' };
    const body = Buffer.from(JSON.stringify({ ...bodySignature(provider, input), data: { n: 1 } }));
    const spec: ProviderSpec = {
      provider,
      ...(provider === 'hmac' ? { hmac: { ...FUZZ_HMAC, algorithm: 'sha256', encoding: 'hex' } } : {}),
      ...(provider === 'twilio' || provider === 'hubspot' ? { url: FUZZ_URL } : {}),
    };
    const verdict = createProvider(spec).verify({
      rawBody: body,
      headers: signatureHeaders(provider, { ...input, body }),
      secrets: [FUZZ_SECRETS[provider]],
      nowMs: NOW_MS,
      toleranceSeconds: 300,
    });
    expect(verdict).toEqual({ ok: true });
  });
});
