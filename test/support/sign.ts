import { createHmac } from 'node:crypto';

/**
 * Each provider's documented signing formula, written here independently of hookgate's
 * verifiers, for tests that need to sign arbitrary bytes (fuzzing, hostile bodies).
 */
export type FuzzProvider =
  | 'standard-webhooks'
  | 'svix'
  | 'stripe'
  | 'github'
  | 'shopify'
  | 'slack'
  | 'paddle'
  | 'hmac';

export const FUZZ_SECRETS: Readonly<Record<FuzzProvider, string>> = {
  'standard-webhooks': `whsec_${Buffer.from('fuzzing key for standard!').toString('base64')}`,
  svix: `whsec_${Buffer.from('fuzzing key for svix sender').toString('base64')}`,
  stripe: 'whsec_fuzz_stripe_secret',
  github: 'fuzz-github-secret',
  shopify: 'shpss_fuzz_secret',
  slack: 'fuzz-slack-signing-secret',
  paddle: 'pdl_ntfset_fuzz_secret',
  hmac: 'fuzz-hmac-secret',
};

/** The hmac endpoint's options in the fuzz config. */
export const FUZZ_HMAC = {
  header: 'X-Signature',
  prefix: 'sha256=',
  eventIdHeader: 'X-Event-Id',
  eventTypeHeader: 'X-Event-Type',
} as const;

export interface SignInput {
  readonly body: Buffer;
  readonly secret: string;
  /** Unix seconds for timestamped schemes. */
  readonly timestamp: number;
  /** Standard Webhooks / Svix id (signed); ignored by the others. */
  readonly id: string;
}

function mac(key: string | Buffer, ...parts: (string | Buffer)[]): Buffer {
  const h = createHmac('sha256', key);
  for (const part of parts) h.update(part);
  return h.digest();
}

/** The signature headers a provider would send for `input`. */
export function signatureHeaders(provider: FuzzProvider, input: SignInput): Record<string, string> {
  const { body, secret, timestamp, id } = input;
  switch (provider) {
    case 'standard-webhooks':
    case 'svix': {
      const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
      const signature = mac(key, `${id}.${timestamp}.`, body).toString('base64');
      const prefix = provider === 'svix' ? 'svix' : 'webhook';
      return {
        [`${prefix}-id`]: id,
        [`${prefix}-timestamp`]: String(timestamp),
        [`${prefix}-signature`]: `v1,${signature}`,
      };
    }
    case 'stripe':
      return {
        'stripe-signature': `t=${timestamp},v1=${mac(secret, `${timestamp}.`, body).toString('hex')}`,
      };
    case 'github':
      return { 'x-hub-signature-256': `sha256=${mac(secret, body).toString('hex')}` };
    case 'shopify':
      return { 'x-shopify-hmac-sha256': mac(secret, body).toString('base64') };
    case 'slack':
      return {
        'x-slack-request-timestamp': String(timestamp),
        'x-slack-signature': `v0=${mac(secret, `v0:${timestamp}:`, body).toString('hex')}`,
      };
    case 'paddle':
      return {
        'paddle-signature': `ts=${timestamp};h1=${mac(secret, `${timestamp}:`, body).toString('hex')}`,
      };
    case 'hmac':
      return { [FUZZ_HMAC.header.toLowerCase()]: `${FUZZ_HMAC.prefix}${mac(secret, body).toString('hex')}` };
  }
}
