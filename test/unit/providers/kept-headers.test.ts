import { describe, expect, it } from 'vitest';
import {
  eventHeaders,
  type HeaderRules,
  quarantineHeaders,
} from '../../../services/core/providers/headers.ts';
import { hmacOptionsSchema } from '../../../services/core/providers/hmac-options.ts';
import {
  createProvider,
  PROVIDER_NAMES,
  type ProviderName,
  type ProviderSpec,
} from '../../../services/core/providers/index.ts';
import { PRESETS } from '../../../services/core/providers/presets.ts';
import { schemeOptionsSchema } from '../../../services/core/providers/scheme-options.ts';
import { request } from './fixtures.ts';

// What an inbox event and a quarantined delivery keep of a request's headers: an allow-list from
// the provider's own definition (its id, type, timestamp and delivery headers), never its
// signature or token header nor the request's credentials, for every provider there is.

const CREDENTIALS = ['authorization', 'proxy-authorization', 'cookie', 'x-hookgate-replay-token'];
/** A `scheme` whose shared token travels in a header no name rule could guess. */
const SCHEME_TOKEN = schemeOptionsSchema.parse({
  algorithm: 'token',
  header: 'X-Relay-Word',
  encoding: 'text',
  id: { header: 'X-Delivery' },
  type: { pointer: '/kind' },
});
const HMAC = hmacOptionsSchema.parse({
  header: 'X-Body-Mac',
  eventIdHeader: 'X-Event-Id',
  eventTypeHeader: 'X-Event-Type',
});

function specOf(provider: ProviderName): ProviderSpec {
  if (provider === 'hmac') return { provider, hmac: HMAC };
  if (provider === 'scheme') return { provider, scheme: SCHEME_TOKEN };
  return { provider, url: 'https://hooks.example.com/webhooks/x' };
}

/** Every header the rules name, the credentials, and two nobody names, each with its own value. */
function everyHeader(rules: HeaderRules): Record<string, string> {
  const names = [
    ...rules.identity,
    ...rules.delivery,
    ...rules.secret,
    ...CREDENTIALS,
    'user-agent',
    'x-extra',
  ];
  return Object.fromEntries(names.map((name) => [name, `value of ${name}`]));
}

describe('the headers each provider keeps', () => {
  it.each(PROVIDER_NAMES)('%s: an allow-list, never a secret header or a credential', (name) => {
    const rules = createProvider(specOf(name)).headerRules;
    const headers = everyHeader(rules);
    for (const kept of [quarantineHeaders(headers, rules), eventHeaders(headers, rules)]) {
      for (const secret of [...rules.secret, ...CREDENTIALS]) expect(Object.keys(kept)).not.toContain(secret);
      expect(Object.keys(kept)).not.toContain('user-agent');
      expect(Object.keys(kept)).not.toContain('x-extra');
      for (const value of Object.values(kept))
        expect(rules.secret.map((s) => `value of ${s}`)).not.toContain(value);
    }
    // What a release needs to identify the delivery again is kept with it.
    for (const identity of rules.identity.filter((n) => !CREDENTIALS.includes(n)))
      expect(quarantineHeaders(headers, rules)[identity]).toBe(`value of ${identity}`);
    expect(rules.identity.filter((n) => rules.secret.includes(n))).toEqual([]);
    expect(rules.delivery.filter((n) => rules.secret.includes(n))).toEqual([]);
  });

  it("derives a preset scheme's secret headers from its definition: they are its signature headers", () => {
    for (const [name, preset] of Object.entries(PRESETS)) {
      if (!('scheme' in preset) || preset.scheme === undefined) continue;
      const rules = createProvider(specOf(name as ProviderName)).headerRules;
      expect(rules.secret, name).toEqual(preset.scheme.headers.map((h) => h.toLowerCase()));
    }
  });

  it('never keeps the token of any token preset, nor the header a scheme with algorithm token names', () => {
    const tokenPresets = Object.entries(PRESETS)
      .filter(([, preset]) => 'scheme' in preset && preset.scheme?.algorithm === 'token')
      .map(([name]) => name);
    expect(tokenPresets.sort()).toEqual(['gitlab', 'okta', 'postmark']);
    for (const name of [...tokenPresets, 'scheme'] as ProviderName[]) {
      const rules = createProvider(specOf(name)).headerRules;
      expect(rules.secret.length, name).toBeGreaterThan(0);
      const headers = everyHeader(rules);
      const kept = quarantineHeaders(headers, rules);
      for (const secret of rules.secret) expect(kept[secret], `${name} ${secret}`).toBeUndefined();
    }
    expect(createProvider(specOf('scheme')).headerRules.secret).toEqual(['x-relay-word']);
    expect(createProvider(specOf('gitlab')).headerRules.secret).toEqual(['x-gitlab-token']);
  });

  it('GitLab, Okta, Postmark and a token scheme identify an event without keeping their token', () => {
    const cases: Array<[ProviderName, string, Record<string, string>]> = [
      [
        'gitlab',
        '{"object_kind":"push"}',
        { 'X-Gitlab-Token': 'gl-shared-token', 'Idempotency-Key': 'k-1', 'X-Gitlab-Event': 'Push Hook' },
      ],
      ['okta', '{"eventId":"ok-1","eventType":"user.created"}', { Authorization: 'okta-shared-token' }],
      [
        'postmark',
        '{"RecordType":"Bounce"}',
        { Authorization: `Basic ${Buffer.from('user:pm-password').toString('base64')}` },
      ],
      ['scheme', '{"kind":"thing.done"}', { 'X-Relay-Word': 'relay-shared-token', 'X-Delivery': 'd-1' }],
    ];
    for (const [name, body, headers] of cases) {
      const provider = createProvider(specOf(name));
      const secret = name === 'postmark' ? 'user:pm-password' : Object.values(headers)[0]!;
      const req = request(body, headers, [secret]);
      expect(provider.verify(req), name).toEqual({ ok: true });
      const result = provider.identify({
        headers: req.headers,
        body: JSON.parse(body),
        rawBody: req.rawBody,
      });
      expect(result.ok && 'event' in result, name).toBe(true);
      const kept = JSON.stringify([
        result.ok && 'event' in result ? result.event.headers : null,
        quarantineHeaders(req.headers, provider.headerRules),
      ]);
      expect(kept, name).not.toContain(secret.slice(-8));
      expect(kept.toLowerCase(), name).not.toMatch(/authorization|x-gitlab-token|x-relay-word/);
    }
  });
});
