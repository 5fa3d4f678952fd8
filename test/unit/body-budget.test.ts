import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import { BodyBudget } from '../../services/gateway/body-budget.ts';
import { buildEndpoints } from '../../services/gateway/endpoints.ts';

describe('body budget', () => {
  it('takes what fits, refuses what does not, and gives back what is released', () => {
    const budget = new BodyBudget(100);
    expect(budget.reserve(60)).toBe(true);
    expect(budget.reserve(50)).toBe(false);
    expect(budget.held).toBe(60);
    expect(budget.reserve(40)).toBe(true);
    budget.release(60);
    expect(budget.reserve(50)).toBe(true);
    expect(budget.held).toBe(90);
  });

  it('lets one delivery in when nothing is held, whatever its size', () => {
    const budget = new BodyBudget(100);
    expect(budget.reserve(250)).toBe(true);
    expect(budget.reserve(1)).toBe(false);
    budget.release(250);
    expect(budget.held).toBe(0);
  });

  it('is configured no smaller than the body limit of any endpoint that uses server.bodyLimit', () => {
    const config = (server: Record<string, unknown>) =>
      parseConfig({ server, endpoints: { a: { provider: 'stripe', secrets: ['whsec_x'] } } }, {});
    expect(config({ bodyLimit: '4mib', maxBufferedBytes: '8mib' }).server.maxBufferedBytes).toBe(
      8 * 1024 * 1024,
    );
    expect(() => config({ bodyLimit: '4mib', maxBufferedBytes: '2mib' })).toThrow(
      'server.maxBufferedBytes: 2 MiB is smaller than server.bodyLimit (4 MiB), which endpoint a uses',
    );
  });
});

describe('per-endpoint body limits', () => {
  const MIB = 1024 * 1024;
  const parse = (server: Record<string, unknown>, endpoints: Record<string, Record<string, unknown>>) =>
    parseConfig({ server, endpoints }, {});
  const limits = (server: Record<string, unknown>, endpoints: Record<string, Record<string, unknown>>) =>
    new Map([...buildEndpoints(parse(server, endpoints))].map(([name, e]) => [name, e.bodyLimit]));

  it("default to the provider's documented maximum (github, gitlab: 25 MiB), else server.bodyLimit", () => {
    expect(
      limits(
        {},
        {
          gh: { provider: 'github', secrets: ['s'] },
          gl: { provider: 'gitlab', secrets: ['s'] },
          // Bitbucket and Zendesk document 256 KB, within the default; Postmark no payload maximum.
          bb: { provider: 'bitbucket', secrets: ['s'] },
          zd: { provider: 'zendesk', secrets: ['s'] },
          pm: { provider: 'postmark', secrets: ['u:p'] },
          pay: { provider: 'stripe', secrets: ['whsec_x'] },
          shop: { provider: 'shopify', secrets: ['s'] },
        },
      ),
    ).toEqual(
      new Map([
        ['gh', 25 * MIB],
        ['gl', 25 * MIB],
        ['bb', MIB],
        ['zd', MIB],
        ['pm', MIB],
        ['pay', MIB],
        ['shop', MIB],
      ]),
    );
    expect(
      limits({ bodyLimit: '2mib' }, { pay: { provider: 'stripe', secrets: ['whsec_x'] } }).get('pay'),
    ).toBe(2 * MIB);
  });

  it("an endpoint's bodyLimit wins, in the config's size units, within 1 KiB..256 MiB", () => {
    const own = limits(
      {},
      {
        gh: { provider: 'github', secrets: ['s'], bodyLimit: '5mib' },
        pay: { provider: 'stripe', secrets: ['whsec_x'], bodyLimit: 8192 },
      },
    );
    expect(own).toEqual(
      new Map([
        ['gh', 5 * MIB],
        ['pay', 8192],
      ]),
    );
    expect(() => parse({}, { pay: { provider: 'stripe', secrets: ['whsec_x'], bodyLimit: '512b' } })).toThrow(
      'endpoints.pay.bodyLimit: 512b is smaller than the 1kib minimum',
    );
    expect(() =>
      parse(
        { maxBufferedBytes: '1024mib' },
        { pay: { provider: 'stripe', secrets: ['whsec_x'], bodyLimit: '300mib' } },
      ),
    ).toThrow('endpoints.pay.bodyLimit: 300mib is larger than the 256mib maximum');
  });

  it('refuses at load a limit that does not fit in server.maxBufferedBytes, saying what to change', () => {
    expect(() =>
      parse({ maxBufferedBytes: '16mib' }, { gh: { provider: 'github', secrets: ['s'] } }),
    ).toThrow(
      'endpoints.gh.bodyLimit: is unset, so it is 25 MiB, the largest body github sends, which is larger than server.maxBufferedBytes (16 MiB): raise server.maxBufferedBytes to at least 25 MiB',
    );
    expect(() =>
      parse({ maxBufferedBytes: '16mib' }, { gl: { provider: 'gitlab', secrets: ['s'] } }),
    ).toThrow(
      'endpoints.gl.bodyLimit: is unset, so it is 25 MiB, the largest body gitlab sends, which is larger than server.maxBufferedBytes (16 MiB): raise server.maxBufferedBytes to at least 25 MiB',
    );
    expect(() =>
      parse(
        { maxBufferedBytes: '16mib' },
        { pay: { provider: 'stripe', secrets: ['whsec_x'], bodyLimit: '20mib' } },
      ),
    ).toThrow('endpoints.pay.bodyLimit: 20 MiB is larger than server.maxBufferedBytes (16 MiB)');
    // Lowering the endpoint's limit below the budget is the other way out.
    expect(
      limits(
        { maxBufferedBytes: '16mib' },
        { gh: { provider: 'github', secrets: ['s'], bodyLimit: '8mib' } },
      ).get('gh'),
    ).toBe(8 * MIB);
  });
});
