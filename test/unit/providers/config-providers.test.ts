import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../services/core/config/load.ts';

/** Every line of the configuration error, or [] when it loads. */
function problems(endpoint: Record<string, unknown>): string[] {
  try {
    parseConfig({ endpoints: { e: { secrets: ['a-secret-of-some-length'], ...endpoint } } }, {});
    return [];
  } catch (error) {
    return (error as Error).message
      .split('\n')
      .slice(1)
      .map((line) => line.trim());
  }
}

const ed25519Hex = generateKeyPairSync('ed25519')
  .publicKey.export({ type: 'spki', format: 'der' })
  .subarray(12)
  .toString('hex');
const p256 = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
  .publicKey.export({ type: 'spki', format: 'der' })
  .toString('base64');

describe('provider options are validated when the configuration loads, naming the path', () => {
  it('loads every preset with what it needs', () => {
    expect(problems({ provider: 'discord', secrets: [ed25519Hex] })).toEqual([]);
    expect(problems({ provider: 'sendgrid', secrets: [p256] })).toEqual([]);
    expect(problems({ provider: 'twilio', url: 'https://hooks.example.com/webhooks/e' })).toEqual([]);
    expect(problems({ provider: 'bitbucket' })).toEqual([]);
  });

  it('refuses public keys that are not keys of the scheme', () => {
    expect(problems({ provider: 'discord', secrets: ['not-a-key'] })).toEqual([
      'endpoints.e.secrets[0]: is not an Ed25519 public key (64 hex digits, whpk_ or base64 bytes, or PEM)',
    ]);
    // An Ed25519 key where SendGrid's P-256 key belongs.
    expect(problems({ provider: 'sendgrid', secrets: [p256, ed25519Hex] })).toEqual([
      'endpoints.e.secrets[1]: is not an ECDSA P-256 public key (base64 DER or PEM)',
    ]);
  });

  it('refuses a Standard Webhooks private key, and accepts its public key', () => {
    expect(problems({ provider: 'standard-webhooks', secrets: ['whsk_c2VjcmV0'] })).toEqual([
      'endpoints.e.secrets[0]: is a Standard Webhooks signing (private) key: configure its public key (whpk_…) instead',
    ]);
    const whpk = `whpk_${Buffer.from(ed25519Hex, 'hex').toString('base64')}`;
    expect(problems({ provider: 'standard-webhooks', secrets: [whpk] })).toEqual([]);
  });

  it('needs url where the provider signs it, and refuses it elsewhere', () => {
    expect(problems({ provider: 'hubspot' })).toEqual([
      'endpoints.e.url: is required for hubspot: the URL the provider posts to, exactly as configured there (it is signed)',
    ]);
    expect(problems({ provider: 'github', url: 'https://hooks.example.com/x' })).toEqual([
      'endpoints.e.url: is only used by providers that sign the URL (twilio, hubspot, square, or a scheme signing {url})',
    ]);
    expect(problems({ provider: 'square', url: 'ftp://x' })).toEqual([
      'endpoints.e.url: must be an http(s) URL, exactly as configured at the provider',
    ]);
  });

  it('validates the scheme provider, path by path', () => {
    expect(problems({ provider: 'scheme' })).toEqual([
      'endpoints.e.scheme: is required when provider is scheme',
    ]);
    expect(
      problems({
        provider: 'github',
        scheme: { algorithm: 'token', header: 'X', encoding: 'text', id: 'digest' },
      }),
    ).toEqual(['endpoints.e.scheme: is only allowed when provider is scheme']);
    expect(
      problems({
        provider: 'scheme',
        scheme: { algorithm: 'hmac-sha256', header: 'X-Sig', content: '{ts}.{body}', id: 'digest' },
      }),
    ).toEqual([
      'endpoints.e.scheme.content: names {ts}, which is not one of {body}, {timestamp}, {id}, {method}, {url} or {header:Name}',
    ]);
    expect(
      problems({
        provider: 'scheme',
        scheme: { algorithm: 'ed25519', header: 'X-Sig', content: '{body}', id: 'digest' },
      }),
    ).toEqual([
      'endpoints.e.secrets[0]: is not an Ed25519 public key (64 hex digits, whpk_ or base64 bytes, or PEM)',
    ]);
    expect(
      problems({
        provider: 'scheme',
        url: 'https://hooks.example.com/e',
        scheme: {
          algorithm: 'hmac-sha1',
          header: 'X-Sig',
          encoding: 'base64',
          content: '{url}{body}',
          id: { header: 'X-Id' },
        },
      }),
    ).toEqual([]);
    expect(
      problems({
        provider: 'scheme',
        scheme: { algorithm: 'hmac-sha1', header: 'X-Sig', content: '{url}{body}', id: 'digest' },
      }),
    ).toEqual([
      'endpoints.e.url: is required for scheme: the URL the provider posts to, exactly as configured there (it is signed)',
    ]);
  });

  it("refuses scheme secrets that do not decode in the scheme's secretFormat", () => {
    const scheme = {
      algorithm: 'hmac-sha256',
      header: 'X-Sig',
      content: '{body}',
      id: 'digest',
      secretFormat: 'hex',
    };
    expect(problems({ provider: 'scheme', scheme, secrets: ['00ff', 'not hex'] })).toEqual([
      'endpoints.e.secrets[1]: is not hex, as scheme.secretFormat says',
    ]);
  });

  it('allows handshake options on asana only', () => {
    expect(problems({ provider: 'asana', handshake: { revealSecret: true } })).toEqual([]);
    expect(problems({ provider: 'dropbox', handshake: { revealSecret: true } })).toEqual([
      'endpoints.e.handshake: is only used by the asana provider',
    ]);
  });
});
