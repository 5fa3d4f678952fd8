import { createHmac, generateKeyPairSync, type KeyObject, sign } from 'node:crypto';

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
  | 'hmac'
  // The declarative scheme's shapes: a shared token, a form post signing its URL, a v1= list,
  // an RFC 3339 timestamp, a signed id header, milliseconds with the URL and method, and the
  // two public-key schemes.
  | 'gitlab'
  | 'twilio'
  | 'pagerduty'
  | 'zendesk'
  | 'twitch'
  | 'hubspot'
  | 'discord'
  | 'sendgrid'
  // Signs fields it carries inside the JSON body, not the body.
  | 'mailgun';

/** The public-key schemes sign with these; endpoints are configured with the public halves. */
const ED25519 = generateKeyPairSync('ed25519');
const P256 = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
/** Signs for "someone else" in forgeries. */
const STRANGER_ED25519 = generateKeyPairSync('ed25519').privateKey;
const STRANGER_P256 = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey;
const DISCORD_KEY = ED25519.publicKey.export({ type: 'spki', format: 'der' }).subarray(12).toString('hex');
const SENDGRID_KEY = P256.publicKey.export({ type: 'spki', format: 'der' }).toString('base64');

/** The URL the URL-signing schemes' fuzz endpoints are configured with. */
export const FUZZ_URL = 'https://hooks.example.com/webhooks/fuzz';

export const FUZZ_SECRETS: Readonly<Record<FuzzProvider, string>> = {
  'standard-webhooks': `whsec_${Buffer.from('fuzzing key for standard!').toString('base64')}`,
  svix: `whsec_${Buffer.from('fuzzing key for svix sender').toString('base64')}`,
  stripe: 'whsec_fuzz_stripe_secret',
  github: 'fuzz-github-secret',
  shopify: 'shpss_fuzz_secret',
  slack: 'fuzz-slack-signing-secret',
  paddle: 'pdl_ntfset_fuzz_secret',
  hmac: 'fuzz-hmac-secret',
  gitlab: 'fuzz-gitlab-token',
  twilio: 'fuzz-twilio-auth-token',
  pagerduty: 'fuzz-pagerduty-secret',
  zendesk: 'fuzz-zendesk-secret',
  twitch: 'fuzz-twitch-secret-0123456789',
  hubspot: 'fuzz-hubspot-client-secret',
  discord: DISCORD_KEY,
  sendgrid: SENDGRID_KEY,
  mailgun: 'fuzz-mailgun-signing-key',
};

/**
 * Schemes whose signature travels inside the body (Mailgun): the fields to add to the body's
 * object before it is serialised; the others sign the body and add nothing.
 */
export function bodySignature(
  provider: FuzzProvider,
  input: Omit<SignInput, 'body'>,
): Record<string, unknown> {
  if (provider !== 'mailgun') return {};
  const token = createHmac('sha256', 'token')
    .update(`${input.id}${input.timestamp}`)
    .digest('hex')
    .slice(0, 50);
  const timestamp = String(input.timestamp);
  return { signature: { timestamp, token, signature: mac(input.secret, timestamp, token).toString('hex') } };
}

/** The private key that signs for a configured public key, or a stranger's for anything else. */
function privateKeyFor(secret: string, stranger: KeyObject): KeyObject {
  if (secret === DISCORD_KEY) return ED25519.privateKey;
  if (secret === SENDGRID_KEY) return P256.privateKey;
  return stranger;
}

/** Twilio's formula: the URL, then each form parameter's name and value, names sorted. */
function twilioContent(url: string, body: Buffer): string {
  const params = new Map<string, string[]>();
  for (const [name, value] of new URLSearchParams(body.toString('utf8')))
    params.set(name, [...(params.get(name) ?? []), value]);
  let out = url;
  for (const name of [...params.keys()].sort())
    for (const value of [...new Set(params.get(name))].sort()) out += name + value;
  return out;
}

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
  /** Standard Webhooks / Svix / Twitch id (signed); ignored by the others. */
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
    case 'gitlab':
      return { 'x-gitlab-token': secret };
    case 'twilio':
      return {
        'x-twilio-signature': createHmac('sha1', secret)
          .update(twilioContent(FUZZ_URL, body))
          .digest('base64'),
      };
    case 'pagerduty':
      return { 'x-pagerduty-signature': `v1=${mac(secret, body).toString('hex')}` };
    case 'zendesk': {
      const iso = new Date(timestamp * 1000).toISOString().replace('.000Z', 'Z');
      return {
        'x-zendesk-webhook-signature-timestamp': iso,
        'x-zendesk-webhook-signature': mac(secret, iso, body).toString('base64'),
      };
    }
    case 'twitch': {
      const iso = new Date(timestamp * 1000).toISOString();
      return {
        'twitch-eventsub-message-id': id,
        'twitch-eventsub-message-timestamp': iso,
        'twitch-eventsub-message-signature': `sha256=${mac(secret, id, iso, body).toString('hex')}`,
      };
    }
    case 'hubspot': {
      const ms = String(timestamp * 1000);
      return {
        'x-hubspot-request-timestamp': ms,
        'x-hubspot-signature-v3': mac(secret, `POST${FUZZ_URL}`, body, ms).toString('base64'),
      };
    }
    case 'discord':
      return {
        'x-signature-timestamp': String(timestamp),
        'x-signature-ed25519': sign(
          null,
          Buffer.concat([Buffer.from(String(timestamp)), body]),
          privateKeyFor(secret, STRANGER_ED25519),
        ).toString('hex'),
      };
    case 'mailgun':
      return {};
    case 'sendgrid':
      return {
        'x-twilio-email-event-webhook-timestamp': String(timestamp),
        'x-twilio-email-event-webhook-signature': sign(
          'sha256',
          Buffer.concat([Buffer.from(String(timestamp)), body]),
          privateKeyFor(secret, STRANGER_P256),
        ).toString('base64'),
      };
  }
}
