import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';

// Where `hookgate replay` reads a github endpoint's deliveries: exactly one webhook, each kind
// with what its API needs.
const github = (replay: Record<string, unknown>) =>
  parseConfig({ endpoints: { gh: { provider: 'github', secrets: ['s'], replay } } }, {});

describe('replay settings', () => {
  it('accept a repository, an organization or a GitHub App webhook', () => {
    expect(github({ repository: 'acme/shop', hookId: 1 }).endpoints.gh?.replay).toMatchObject({
      repository: 'acme/shop',
      hookId: 1,
    });
    expect(github({ organization: 'acme', hookId: 2 }).endpoints.gh?.replay).toMatchObject({
      organization: 'acme',
    });
    expect(github({ appId: 12345 }).endpoints.gh?.replay).toMatchObject({ appId: 12345 });
    expect(github({ appId: 'Iv23liAbCdEf' }).endpoints.gh?.replay).toMatchObject({ appId: 'Iv23liAbCdEf' });
  });

  it('refuse none, more than one, or a missing or needless hookId, naming the key', () => {
    expect(() => github({})).toThrow(
      'endpoints.gh.replay: needs the webhook that delivers here: repository (owner/repo) and hookId, organization and hookId, or appId (a GitHub App)',
    );
    expect(() => github({ repository: 'acme/shop', appId: 1, hookId: 1 })).toThrow(
      'endpoints.gh.replay: names more than one webhook',
    );
    expect(() => github({ organization: 'acme' })).toThrow(
      'endpoints.gh.replay.hookId: is required with organization',
    );
    expect(() => github({ appId: 1, hookId: 3 })).toThrow(
      'endpoints.gh.replay.hookId: is not used with appId: a GitHub App has one webhook',
    );
    expect(() => github({ organization: 'acme/shop', hookId: 1 })).toThrow(
      'endpoints.gh.replay.organization: must be an organization login such as acme',
    );
    expect(() =>
      parseConfig(
        {
          endpoints: { pay: { provider: 'stripe', secrets: ['whsec_x'], replay: { organization: 'acme' } } },
        },
        {},
      ),
    ).toThrow('endpoints.pay.replay: repository, organization, hookId and appId are for github endpoints');
  });
});
