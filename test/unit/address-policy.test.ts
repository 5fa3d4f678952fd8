import { describe, expect, it } from 'vitest';
import {
  carriedIpv4,
  compileAddressPolicy,
  parseAllowEntry,
} from '../../services/core/config/address-policy.ts';
import { parseConfig } from '../../services/core/config/load.ts';

describe('relay.allowedDestinations entries', () => {
  it('parses CIDRs, bare addresses and host patterns, and says why anything else is not one', () => {
    expect(parseAllowEntry('10.0.0.0/8')).toEqual({
      kind: 'cidr',
      network: '10.0.0.0',
      prefix: 8,
      family: 'ipv4',
    });
    expect(parseAllowEntry('10.1.2.3')).toEqual({
      kind: 'cidr',
      network: '10.1.2.3',
      prefix: 32,
      family: 'ipv4',
    });
    expect(parseAllowEntry('fd00::/8')).toEqual({
      kind: 'cidr',
      network: 'fd00::',
      prefix: 8,
      family: 'ipv6',
    });
    expect(parseAllowEntry('::ffff:10.0.0.1/32')).toMatchObject({ network: '10.0.0.1', family: 'ipv4' });
    expect(parseAllowEntry('API.Example.com.')).toEqual({ kind: 'host', pattern: 'api.example.com' });
    expect(parseAllowEntry('*.example.com')).toEqual({ kind: 'host', pattern: '*.example.com' });
    expect(parseAllowEntry('10.0.0.0/33')).toBe('the prefix length must be a whole number from 0 to 32');
    expect(parseAllowEntry('10.0.0.0/')).toBe('the prefix length must be a whole number from 0 to 32');
    expect(parseAllowEntry('example.com/8')).toMatch(/^must be a CIDR such as 10\.0\.0\.0\/8/);
    expect(parseAllowEntry('http://example.com')).toMatch(/^must be a CIDR such as 10\.0\.0\.0\/8/);
    for (const bad of ['', 'api.*.com', 'exa mple.com', '*', '-a.com', 'a..com']) {
      expect(parseAllowEntry(bad), bad).toMatch(/^must be a CIDR \(10\.0\.0\.0\/8\), an IP address/);
    }
  });
});

describe('the address policy', () => {
  const policy = compileAddressPolicy([
    'api.example.com',
    '*.hooks.example.net',
    '10.20.0.0/16',
    'fd12::/16',
  ]);

  it('lets a matching host reach public addresses only', () => {
    expect(policy.refusal('api.example.com', '93.184.216.34')).toBeNull();
    expect(policy.refusal('API.EXAMPLE.COM.', '2606:2800:220:1::1')).toBeNull();
    expect(policy.refusal('a.hooks.example.net', '93.184.216.34')).toBeNull();
    // `*.` is below the name, not the name itself.
    expect(policy.refusal('hooks.example.net', '93.184.216.34')).toMatch(/matches no entry/);
    expect(policy.refusal('evil-api.example.com', '93.184.216.34')).toBe(
      'the address 93.184.216.34 (of evil-api.example.com) matches no entry of relay.allowedDestinations',
    );
  });

  it('refuses private, loopback, link-local and metadata addresses even for a matching host', () => {
    const cases: [string, string][] = [
      ['127.0.0.1', 'loopback (127.0.0.0/8)'],
      ['10.0.0.5', 'private (10.0.0.0/8)'],
      ['172.31.255.1', 'private (172.16.0.0/12)'],
      ['192.168.1.1', 'private (192.168.0.0/16)'],
      ['169.254.169.254', 'link-local (cloud metadata) (169.254.0.0/16)'],
      ['100.100.100.200', 'carrier-grade NAT (100.64.0.0/10)'],
      ['0.0.0.0', 'unspecified (0.0.0.0/8)'],
      ['::1', 'loopback (::1/128)'],
      ['fe80::1', 'link-local (fe80::/10)'],
      ['fd00:ec2::254', 'private (fc00::/7)'],
      ['64:ff9b::a9fe:a9fe', 'NAT64 (64:ff9b::/96)'],
    ];
    for (const [address, kind] of cases) {
      expect(policy.refusal('api.example.com', address), address).toBe(
        `the address ${address} (of api.example.com) is ${kind}, which relay.allowedDestinations allows only by a CIDR entry covering it`,
      );
    }
    // IPv4 written as IPv6 is the IPv4 address.
    expect(policy.refusal('api.example.com', '::ffff:127.0.0.1')).toMatch(
      /^the address 127\.0\.0\.1 .* is loopback/,
    );
  });

  it('lets a CIDR entry open its range, for any host name or none', () => {
    expect(policy.refusal('10.20.3.4', '10.20.3.4')).toBeNull();
    expect(policy.refusal('internal.corp', '10.20.3.4')).toBeNull();
    expect(policy.refusal('internal.corp', 'fd12::7')).toBeNull();
    expect(policy.refusal('10.21.0.1', '10.21.0.1')).toBe(
      'the address 10.21.0.1 is private (10.0.0.0/8), which relay.allowedDestinations allows only by a CIDR entry covering it',
    );
    expect(policy.refusal('[fd13::1]', 'fd13::1')).toMatch(/^the address fd13::1 is private/);
    expect(policy.refusal('8.8.8.8', '8.8.8.8')).toBe(
      'the address 8.8.8.8 matches no entry of relay.allowedDestinations',
    );
  });
});

describe('IPv6 addresses that carry an IPv4 address', () => {
  // 2000::/3 holds every 6to4 address: it opens none of them (what they carry decides).
  const policy = compileAddressPolicy(['api.example.com', '10.20.0.0/16', '2000::/3']);

  it('finds the IPv4 address of every embedding form, in any spelling', () => {
    expect(carriedIpv4('::ffff:127.0.0.1')).toMatchObject({ form: 'IPv4-mapped', ipv4: '127.0.0.1' });
    expect(carriedIpv4('::ffff:7f00:1')).toMatchObject({ form: 'IPv4-mapped', ipv4: '127.0.0.1' });
    expect(carriedIpv4('0:0:0:0:0:FFFF:A9FE:A9FE')).toMatchObject({
      form: 'IPv4-mapped',
      ipv4: '169.254.169.254',
    });
    expect(carriedIpv4('::ffff:0:a00:5')).toMatchObject({ form: 'IPv4-translated', ipv4: '10.0.0.5' });
    expect(carriedIpv4('::ffff:0:10.0.0.5')).toMatchObject({ form: 'IPv4-translated', ipv4: '10.0.0.5' });
    expect(carriedIpv4('::7f00:1')).toMatchObject({ form: 'IPv4-compatible', ipv4: '127.0.0.1' });
    expect(carriedIpv4('::169.254.169.254')).toMatchObject({
      form: 'IPv4-compatible',
      ipv4: '169.254.169.254',
    });
    expect(carriedIpv4('2002:a9fe:a9fe::1')).toMatchObject({ form: '6to4', ipv4: '169.254.169.254' });
    expect(carriedIpv4('2002:0a14:0304:1::%eth0')).toMatchObject({ form: '6to4', ipv4: '10.20.3.4' });
    // Their own addresses, and ordinary IPv6 ones, carry none.
    for (const own of ['::', '::1', '2606:2800:220:1::1', 'fe80::1', '127.0.0.1']) {
      expect(carriedIpv4(own), own).toBeNull();
    }
  });

  it('checks each as the IPv4 address it carries: refused where that address is, allowed where it is', () => {
    const cases: [string, string][] = [
      ['::ffff:7f00:1', 'the address 127.0.0.1 (of api.example.com) is loopback (127.0.0.0/8)'],
      [
        '::ffff:0:a9fe:a9fe',
        'the address 169.254.169.254 (carried by the IPv4-translated address ::ffff:0:a9fe:a9fe, of api.example.com) is link-local (cloud metadata) (169.254.0.0/16)',
      ],
      [
        '::a00:5',
        'the address 10.0.0.5 (carried by the IPv4-compatible address ::a00:5, of api.example.com) is private (10.0.0.0/8)',
      ],
      [
        '2002:7f00:1::',
        'the address 127.0.0.1 (carried by the 6to4 address 2002:7f00:1::, of api.example.com) is loopback (127.0.0.0/8)',
      ],
    ];
    for (const [address, refusal] of cases) {
      expect(policy.refusal('api.example.com', address), address).toBe(
        `${refusal}, which relay.allowedDestinations allows only by a CIDR entry covering it`,
      );
    }
    // An IPv4 CIDR entry opens the IPv4 address in any of its IPv6 forms.
    expect(policy.refusal('internal.corp', '2002:0a14:0304::1')).toBeNull();
    expect(policy.refusal('internal.corp', '::ffff:0:10.20.3.4')).toBeNull();
    // A public IPv4 address carried by 6to4, for a matching host, as for the IPv4 address itself.
    expect(policy.refusal('api.example.com', '2002:5db8:d822::1')).toBeNull();
    expect(policy.refusal('other.example.com', '2002:5db8:d822::1')).toBe(
      'the address 93.184.216.34 (carried by the 6to4 address 2002:5db8:d822::1, of other.example.com) matches no entry of relay.allowedDestinations',
    );
  });

  it('refuses NAT64 (both prefixes) and Teredo, which reach IPv4 hosts through a gateway, for any host', () => {
    const hostOnly = compileAddressPolicy(['api.example.com']);
    for (const [address, kind] of [
      ['64:ff9b::7f00:1', 'NAT64 (64:ff9b::/96)'],
      ['64:ff9b:1::a9fe:a9fe', 'NAT64 (local use) (64:ff9b:1::/48)'],
      ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo (2001::/32)'],
    ]) {
      expect(hostOnly.refusal('api.example.com', address!)).toBe(
        `the address ${address} (of api.example.com) is ${kind}, which relay.allowedDestinations allows only by a CIDR entry covering it`,
      );
    }
  });

  it('refuses an entry inside an embedding range, which could never match: the IPv4 range is named instead', () => {
    expect(parseAllowEntry('2002::/16')).toBe(
      'is inside 6to4 2002::/16, whose addresses are checked as the IPv4 address they carry (0.0.0.0 here): name the IPv4 address or range instead',
    );
    expect(parseAllowEntry('2002:a14::/32')).toMatch(/^is inside 6to4 2002::\/16, .*\(10\.20\.0\.0 here\)/);
    expect(parseAllowEntry('::ffff:0:0:0/96')).toMatch(/^is inside IPv4-translated ::ffff:0:0:0\/96/);
    expect(parseAllowEntry('::a00:0/104')).toMatch(/^is inside IPv4-compatible ::\/96/);
    // Wider ranges that hold them, and the loopback and unspecified addresses, are entries as before.
    expect(parseAllowEntry('2000::/3')).toMatchObject({ kind: 'cidr', network: '2000::', prefix: 3 });
    expect(parseAllowEntry('::1')).toMatchObject({ kind: 'cidr', network: '::1', prefix: 128 });
  });
});

describe('relay.allowedDestinations in the configuration', () => {
  const base = { endpoints: { pay: { provider: 'stripe', secrets: ['whsec_x'] } } };

  it('is unset by default (no restriction) and accepts a list', () => {
    expect(parseConfig(base, {}).relay.allowedDestinations).toBeUndefined();
    const config = parseConfig(
      { ...base, relay: { allowedDestinations: ['10.0.0.0/8', '*.example.com'] } },
      {},
    );
    expect(config.relay.allowedDestinations).toEqual(['10.0.0.0/8', '*.example.com']);
  });

  it('refuses an entry that is neither a CIDR nor a host pattern, naming it', () => {
    expect(() => parseConfig({ ...base, relay: { allowedDestinations: ['10.0.0.0/40'] } }, {})).toThrow(
      'relay.allowedDestinations[0]: the prefix length must be a whole number from 0 to 32',
    );
    expect(() => parseConfig({ ...base, relay: { allowedDestinations: [] } }, {})).toThrow(
      /needs at least one entry/,
    );
  });
});
