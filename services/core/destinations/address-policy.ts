import { BlockList, isIP } from 'node:net';

// `relay.allowedDestinations` (docs/destinations.md#address-safety): which addresses the
// destination relay may connect to. Checked against the address a connection actually goes to
// (services/worker/guarded-dispatcher.ts), never against the URL alone, so a name that resolves
// somewhere else (DNS rebinding, a record pointed at 169.254.169.254) is refused all the same.

/**
 * Ranges no destination reaches unless a CIDR entry names them: private, loopback, link-local
 * (cloud metadata at 169.254.169.254 and fd00:ec2::254), carrier-grade NAT (Alibaba's metadata at
 * 100.100.100.200), unspecified, multicast, reserved and NAT64 (which can wrap any IPv4 address).
 */
const SPECIAL_RANGES: readonly (readonly [string, number, 'ipv4' | 'ipv6', string])[] = [
  ['0.0.0.0', 8, 'ipv4', 'unspecified'],
  ['10.0.0.0', 8, 'ipv4', 'private'],
  ['100.64.0.0', 10, 'ipv4', 'carrier-grade NAT'],
  ['127.0.0.0', 8, 'ipv4', 'loopback'],
  ['169.254.0.0', 16, 'ipv4', 'link-local (cloud metadata)'],
  ['172.16.0.0', 12, 'ipv4', 'private'],
  ['192.0.0.0', 24, 'ipv4', 'reserved'],
  ['192.168.0.0', 16, 'ipv4', 'private'],
  ['198.18.0.0', 15, 'ipv4', 'reserved'],
  ['224.0.0.0', 4, 'ipv4', 'multicast'],
  ['240.0.0.0', 4, 'ipv4', 'reserved'],
  ['::', 128, 'ipv6', 'unspecified'],
  ['::1', 128, 'ipv6', 'loopback'],
  ['64:ff9b::', 96, 'ipv6', 'NAT64'],
  ['fc00::', 7, 'ipv6', 'private'],
  ['fe80::', 10, 'ipv6', 'link-local'],
  ['ff00::', 8, 'ipv6', 'multicast'],
];

const special = SPECIAL_RANGES.map(([network, prefix, family, kind]) => {
  const list = new BlockList();
  list.addSubnet(network, prefix, family);
  return { list, kind, cidr: `${network}/${prefix}` };
});

/** Host patterns: a DNS name, or `*.` and a name for any name below it (not the name itself). */
const HOST_PATTERN = /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

export type AllowEntry =
  | {
      readonly kind: 'cidr';
      readonly network: string;
      readonly prefix: number;
      readonly family: 'ipv4' | 'ipv6';
    }
  | { readonly kind: 'host'; readonly pattern: string };

/** An IPv4 address written as IPv6 (`::ffff:127.0.0.1`) is that IPv4 address. */
function unmapped(address: string): string {
  const match = /^::ffff:(\d{1,3}(\.\d{1,3}){3})$/i.exec(address);
  return match?.[1] ?? address;
}

/** One entry of the list, or a sentence saying why it is not one. */
export function parseAllowEntry(text: string): AllowEntry | string {
  const slash = text.indexOf('/');
  const address = unmapped(slash === -1 ? text : text.slice(0, slash));
  const version = isIP(address);
  if (version !== 0) {
    const max = version === 4 ? 32 : 128;
    const prefixText = slash === -1 ? String(max) : text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > max) {
      return `the prefix length must be a whole number from 0 to ${max}`;
    }
    return {
      kind: 'cidr',
      network: address,
      prefix: Number(prefixText),
      family: version === 4 ? 'ipv4' : 'ipv6',
    };
  }
  if (slash !== -1) return 'must be a CIDR such as 10.0.0.0/8 (the address before / is not an IP address)';
  const pattern = text.toLowerCase().replace(/\.$/, '');
  if (pattern.length > 253 || !HOST_PATTERN.test(pattern)) {
    return 'must be a CIDR (10.0.0.0/8), an IP address, a host name (api.example.com) or *. and a host name (*.example.com)';
  }
  return { kind: 'host', pattern };
}

function hostMatches(pattern: string, host: string): boolean {
  if (pattern.startsWith('*.')) return host.endsWith(pattern.slice(1));
  return host === pattern;
}

export interface AddressPolicy {
  /**
   * Null when a connection to `address` for the URL's host `host` is allowed; otherwise the
   * sentence saying which address was refused and by which rule.
   */
  refusal(host: string, address: string): string | null;
}

/**
 * Allowed: an address inside a CIDR entry; or, for a host matching a host entry, any address
 * outside the special ranges (a host entry never opens a private range: only a CIDR does).
 */
export function compileAddressPolicy(entries: readonly string[]): AddressPolicy {
  const cidrs = new BlockList();
  const hosts: string[] = [];
  for (const text of entries) {
    const entry = parseAllowEntry(text);
    if (typeof entry === 'string') throw new Error(`relay.allowedDestinations: ${text} ${entry}`);
    if (entry.kind === 'cidr') cidrs.addSubnet(entry.network, entry.prefix, entry.family);
    else hosts.push(entry.pattern);
  }
  return {
    refusal(hostText, addressText) {
      const host = hostText
        .toLowerCase()
        .replace(/^\[|\]$/g, '')
        .replace(/\.$/, '');
      const address = unmapped(addressText);
      const version = isIP(address);
      if (version === 0) return `the address ${addressText} of ${host} is not an IP address`;
      const family = version === 4 ? 'ipv4' : 'ipv6';
      if (cidrs.check(address, family)) return null;
      const range = special.find((range) => range.list.check(address, family));
      const of = host === address ? '' : ` (of ${host})`;
      if (range) {
        return `the address ${address}${of} is ${range.kind} (${range.cidr}), which relay.allowedDestinations allows only by a CIDR entry covering it`;
      }
      if (hosts.some((pattern) => hostMatches(pattern, host))) return null;
      return `the address ${address}${of} matches no entry of relay.allowedDestinations`;
    },
  };
}
