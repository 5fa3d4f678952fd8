// Signing for each provider's scheme. The HMAC primitive is a parameter, so this exact code
// runs in k6 (k6/crypto) and in Node.js (node:crypto); tests check its output with the
// providers' own SDK verifiers. Plain JavaScript only: no Buffer, TextEncoder or atob.

/** HMAC-SHA256 of `message` (UTF-8) under `key` (UTF-8 text or raw bytes), hex or base64. */
export type Hmac = (key: string | ArrayBuffer, message: string, encoding: 'hex' | 'base64') => string;

export type Headers = Record<string, string>;

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** Standard base64 (padding optional) to bytes; throws on anything else. */
export function decodeBase64(text: string): ArrayBuffer {
  const clean = text.replace(/=+$/, '');
  if (!/^[A-Za-z0-9+/]*$/.test(clean) || clean.length % 4 === 1) {
    throw new Error('not base64');
  }
  const bytes = new Uint8Array(Math.floor((clean.length * 3) / 4));
  let bits = 0;
  let value = 0;
  let out = 0;
  for (let i = 0; i < clean.length; i += 1) {
    value = (value << 6) | BASE64.indexOf(clean[i]!);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes[out] = (value >> bits) & 0xff;
      out += 1;
    }
  }
  return bytes.buffer;
}

/** `whsec_<base64>` (or bare base64): the key is the decoded bytes. */
export function standardWebhooksKey(secret: string): ArrayBuffer {
  return decodeBase64(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret);
}

/** Standard Webhooks: `v1,<base64 HMAC(key, id.timestamp.body)>`. */
export function signStandardWebhooks(
  hmac: Hmac,
  secret: string,
  id: string,
  timestampSeconds: number,
  body: string,
): Headers {
  const signature = hmac(standardWebhooksKey(secret), `${id}.${timestampSeconds}.${body}`, 'base64');
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': `v1,${signature}`,
  };
}

/** Stripe: `t=<ts>,v1=<hex HMAC(secret, ts.body)>`, the secret used verbatim. */
export function signStripe(hmac: Hmac, secret: string, timestampSeconds: number, body: string): Headers {
  return {
    'content-type': 'application/json',
    'stripe-signature': `t=${timestampSeconds},v1=${hmac(secret, `${timestampSeconds}.${body}`, 'hex')}`,
  };
}

/** GitHub: `sha256=<hex HMAC(secret, body)>`; the delivery id is an unsigned header. */
export function signGithub(
  hmac: Hmac,
  secret: string,
  deliveryId: string,
  event: string,
  body: string,
): Headers {
  return {
    'content-type': 'application/json',
    'x-github-delivery': deliveryId,
    'x-github-event': event,
    'x-hub-signature-256': `sha256=${hmac(secret, body, 'hex')}`,
  };
}
