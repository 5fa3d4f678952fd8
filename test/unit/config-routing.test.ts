import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseConfig } from '../../services/core/config/load.ts';
import { HookgateError } from '../../services/core/errors.ts';

// One way out of hookgate, spelled one way: `handler: forward` is refused with the configuration
// to write instead, computed from the endpoint's own options; billing's `notify` names one of the
// endpoint's destinations, which its handler routes to (`routedBy: handler`), checked at load.

const STRIPE = { provider: 'stripe', secrets: ['whsec_x'] };

function problem(document: unknown, env: Record<string, string> = {}): string {
  try {
    parseConfig(document, env);
  } catch (error) {
    expect(error).toBeInstanceOf(HookgateError);
    expect((error as HookgateError).code).toBe('config_invalid');
    return (error as HookgateError).message;
  }
  throw new Error('expected the configuration to be refused');
}

/** The YAML a problem line gives, as a document (its indented lines). */
function yamlIn(message: string, endpoint: string): unknown {
  const lines = message.split('\n');
  const start = lines.findIndex((line) => line.startsWith(`  endpoints.${endpoint}.handler: forward`));
  const block = lines
    .slice(start + 1)
    .filter((_line, n, all) => all.slice(0, n + 1).every((l) => l.startsWith('      ')));
  return parse(block.map((line) => line.slice(6)).join('\n'));
}

describe('handler: forward', () => {
  it('is refused with the YAML to write instead: its url (as written) and timeout become a destination', () => {
    const message = problem(
      {
        endpoints: {
          orders: {
            ...STRIPE,
            handler: 'forward',
            options: { url: 'https://erp.example/in/${ERP_TOKEN}', timeout: '5s' },
          },
        },
      },
      { ERP_TOKEN: 'tok-never-printed' },
    );
    expect(message).toContain(
      'endpoints.orders.handler: forward is not a handler: events leave hookgate through destinations only',
    );
    expect(message).not.toContain('tok-never-printed');
    const instead = yamlIn(message, 'orders');
    expect(instead).toEqual({
      endpoints: {
        orders: {
          handler: 'record',
          destinations: { forward: { url: 'https://erp.example/in/${ERP_TOKEN}', timeout: '5s' } },
        },
      },
    });
    // What it says to write is a configuration hookgate accepts, with the same URL and timeout.
    const endpoint = (instead as { endpoints: { orders: Record<string, unknown> } }).endpoints.orders;
    const config = parseConfig({ endpoints: { orders: { ...STRIPE, ...endpoint } } }, { ERP_TOKEN: 'tok' });
    expect(config.endpoints.orders?.handler).toBe('record');
    expect(config.endpoints.orders?.destinations?.forward).toMatchObject({
      url: 'https://erp.example/in/tok',
      timeout: 5_000,
      routedBy: 'filter',
    });
  });

  it('names a destination the endpoint does not use yet, and still reports every other problem', () => {
    const message = problem({
      endpoints: {
        orders: {
          ...STRIPE,
          handler: 'forward',
          options: { url: 'https://erp.example/in' },
          destinations: {
            forward: { url: 'https://a.example/' },
            'forward-2': { url: 'https://b.example/' },
          },
        },
        broken: { provider: 'nope', secrets: ['x'] },
      },
    });
    expect(yamlIn(message, 'orders')).toEqual({
      endpoints: {
        orders: { handler: 'record', destinations: { 'forward-3': { url: 'https://erp.example/in' } } },
      },
    });
    expect(message).toMatch(/\n {2}endpoints\.broken\.provider: unknown provider "nope"/);
    // Its options are not also reported as another handler's.
    expect(message).not.toMatch(/endpoints\.orders\.options/);
  });
});

describe('billing notify and routedBy: handler', () => {
  const billing = (notify: string, destinations: Record<string, unknown>) => ({
    endpoints: { pay: { ...STRIPE, handler: 'billing', options: { notify }, destinations } },
  });

  it('names a destination of its own endpoint routed by the handler', () => {
    const config = parseConfig(
      billing('ledger', { ledger: { url: 'https://ledger.example/paid', routedBy: 'handler' } }),
      {},
    );
    expect(config.endpoints.pay?.options).toEqual({ notify: 'ledger' });
    expect(config.endpoints.pay?.destinations?.ledger?.routedBy).toBe('handler');
  });

  it('an unknown name is a config error naming the option', () => {
    expect(
      problem(billing('ledgr', { ledger: { url: 'https://l.example/', routedBy: 'handler' } })),
    ).toContain(
      'endpoints.pay.options.notify: names destination ledgr, which this endpoint does not have (its destinations with routedBy: handler: ledger): add it under destinations with routedBy: handler',
    );
  });

  it('a destination routed by its filter is not one a handler routes to', () => {
    expect(problem(billing('ledger', { ledger: { url: 'https://l.example/' } }))).toContain(
      'endpoints.pay.options.notify: names destination ledger, which is routed by its filter: give it routedBy: handler (and no filter) for the handler to route events to it',
    );
  });

  it('a destination routed by the handler has no filter, and needs a handler that routes to it', () => {
    const message = problem({
      endpoints: {
        pay: {
          ...STRIPE,
          handler: 'billing',
          destinations: {
            quiet: { url: 'https://q.example/', routedBy: 'handler' },
            both: { url: 'https://b.example/', routedBy: 'handler', filter: { types: ['invoice.*'] } },
          },
          options: { notify: 'both' },
        },
        rec: { ...STRIPE, destinations: { never: { url: 'https://n.example/', routedBy: 'handler' } } },
      },
    });
    expect(message).toContain(
      'endpoints.pay.destinations.both.filter: is for destinations routed by filter: one with routedBy: handler gets exactly the events its handler routes to it',
    );
    expect(message).toContain(
      'endpoints.pay.destinations.quiet.routedBy: is handler, but handler billing routes no event to it (billing routes to the destination its notify option names): it would never receive anything',
    );
    expect(message).toContain(
      'endpoints.rec.destinations.never.routedBy: is handler, but handler record routes no event to it: it would never receive anything',
    );
    expect(
      problem({
        endpoints: {
          pay: { ...STRIPE, destinations: { a: { url: 'https://a.example/', routedBy: 'later' } } },
        },
      }),
    ).toContain('endpoints.pay.destinations.a.routedBy: must be filter or handler');
  });

  it('a module: handler may route to any of its destinations routed by the handler', () => {
    const config = parseConfig(
      {
        endpoints: {
          mod: {
            ...STRIPE,
            handler: 'module:./mine.ts',
            destinations: { a: { url: 'https://a.example/', routedBy: 'handler' } },
          },
        },
      },
      {},
    );
    expect(config.endpoints.mod?.destinations?.a?.routedBy).toBe('handler');
  });

  it('notifyUrl and notifyTimeout are gone', () => {
    expect(
      problem({
        endpoints: {
          pay: {
            ...STRIPE,
            handler: 'billing',
            options: { notifyUrl: 'https://x.example/', notifyTimeout: '5s' },
          },
        },
      }),
    ).toMatch(
      /endpoints\.pay\.options\.notifyUrl: unknown option[\s\S]*endpoints\.pay\.options\.notifyTimeout: unknown option/,
    );
  });
});

describe('what fetch would refuse on every attempt is refused at load', () => {
  const destination = (settings: Record<string, unknown>) => ({
    endpoints: { pay: { ...STRIPE, destinations: { down: { url: 'https://d.example/in', ...settings } } } },
  });

  it('a URL with credentials, without quoting them', () => {
    const message = problem(destination({ url: 'https://user:s3cr3t-pw@d.example/in' }));
    expect(message).toContain(
      'endpoints.pay.destinations.down.url: must not carry credentials (user:password@): send them in headers, e.g. Authorization',
    );
    expect(message).not.toContain('s3cr3t-pw');
  });

  it('a header value fetch cannot send, resolved from the environment, without quoting it', () => {
    const message = problem(destination({ headers: { Authorization: 'Bearer ${TOKEN}' } }), {
      TOKEN: 'line-one\r\nx-injected: 1',
    });
    expect(message).toContain(
      'endpoints.pay.destinations.down.headers.Authorization: must be a legal HTTP header value: no line breaks, NUL or characters above U+00FF',
    );
    expect(message).not.toContain('line-one');
    expect(problem(destination({ headers: { 'X-Team': 'équipe ✓' } }))).toContain(
      'endpoints.pay.destinations.down.headers.X-Team: must be a legal HTTP header value',
    );
    // Latin-1 is a legal header value.
    expect(
      parseConfig(destination({ headers: { 'X-Team': 'équipe' } }), {}).endpoints.pay?.destinations?.down
        ?.headers,
    ).toEqual({ 'X-Team': 'équipe' });
  });
});
