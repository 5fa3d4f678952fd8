import { BlockList, isIP } from 'node:net';

// `relay.allowedDestinations` (docs/destinations.md#address-safety): which addresses the
// destination relay may connect to. Checked against the address a connection actually goes to
// (services/worker/guarded-dispatcher.ts), never against the URL alone, so a name that resolves
// somewhere else (DNS rebinding, a record pointed at 169.254.169.254) is refused all the same.

/**
 * Ranges no destination reaches unless a CIDR entry names them: private, loopback, link-local
 * (cloud metadata at 169.254.169.254 and fd00:ec2::254), carrier-grade NAT (Alibaba's metadata at
 * 100.100.100.200), unspecified, multicast, reserved, NAT64 (either prefix: a gateway turns it
 * into any IPv4 address it carries) and Teredo (a tunnel to an IPv4 host it hides).
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
  ['64:ff9b:1::', 48, 'ipv6', 'NAT64 (local use)'],
  ['2001::', 32, 'ipv6', 'Teredo'],
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

/** The eight 16-bit words of an IPv6 address (one `isIP` calls 6), its zone left out. */
export function ipv6Words(address: string): number[] | null {
  let text = address.split('%')[0]!.toLowerCase();
  const words: number[] = [];
  const dotted = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  const tail: number[] = [];
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    if ([a, b, c, d].some((part) => part > 255)) return null;
    tail.push((a << 8) | b, (c << 8) | d);
    text = text.slice(0, -dotted[0].length);
    if (text.endsWith(':') && !text.endsWith('::')) text = text.slice(0, -1);
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const parse = (part: string) =>
    part === '' ? [] : part.split(':').map((group) => Number.parseInt(group, 16));
  const head = parse(halves[0]!);
  const rest = halves.length === 2 ? parse(halves[1]!) : [];
  const missing = 8 - head.length - rest.length - tail.length;
  if (missing < 0 || (halves.length === 1 && missing !== 0)) return null;
  words.push(...head, ...Array(missing).fill(0), ...rest, ...tail);
  return words.some((word) => Number.isNaN(word) || word > 0xffff) ? null : words;
}

/** IPv6 forms that carry an IPv4 address, which is where a connection to them ends up. */
const EMBEDDINGS = [
  { form: 'IPv4-mapped', range: '::ffff:0:0/96' },
  { form: 'IPv4-translated', range: '::ffff:0:0:0/96' },
  { form: 'IPv4-compatible', range: '::/96' },
  { form: '6to4', range: '2002::/16' },
] as const;

/**
 * The IPv4 address an IPv6 address carries, and in which form: `::ffff:a.b.c.d` in any spelling
 * (`::ffff:7f00:1`), `::ffff:0:a.b.c.d`, `::a.b.c.d` (but `::` and `::1`, which are their own
 * addresses) and 6to4 `2002:AABB:CCDD::/48`. Null for any other address.
 */
export function carriedIpv4(
  address: string,
): { readonly ipv4: string; readonly form: string; readonly range: string } | null {
  if (isIP(address) !== 6) return null;
  const words = ipv6Words(address);
  if (!words) return null;
  const zeros = (from: number, to: number) => words.slice(from, to).every((word) => word === 0);
  const ipv4 = (high: number, low: number) => `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
  const last = ipv4(words[6]!, words[7]!);
  const at = (index: number, value: string) => ({ ...EMBEDDINGS[index]!, ipv4: value });
  if (zeros(0, 5) && words[5] === 0xffff) return at(0, last);
  if (zeros(0, 4) && words[4] === 0xffff && words[5] === 0) return at(1, last);
  if (zeros(0, 6) && !(words[6] === 0 && words[7]! <= 1)) return at(2, last);
  if (words[0] === 0x2002) return at(3, ipv4(words[1]!, words[2]!));
  return null;
}

/** An IPv4 address written as IPv6 (`::ffff:127.0.0.1`, `::ffff:7f00:1`) is that IPv4 address. */
function unmapped(address: string): string {
  const carried = carriedIpv4(address);
  return carried?.form === 'IPv4-mapped' ? carried.ipv4 : address;
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
    const carried = carriedIpv4(address);
    const embedding = EMBEDDINGS.find((form) => form.range === carried?.range);
    if (carried && embedding && Number(prefixText) >= Number(embedding.range.split('/')[1])) {
      return `is inside ${embedding.form} ${embedding.range}, whose addresses are checked as the IPv4 address they carry (${carried.ipv4} here): name the IPv4 address or range instead`;
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
      if (isIP(addressText) === 0) return `the address ${addressText} of ${host} is not an IP address`;
      // An IPv6 address that carries an IPv4 one reaches that IPv4 address: it is checked as it,
      // whatever IPv6 entries say. `::` and `::1` are their own (special) addresses.
      const carried = carriedIpv4(addressText);
      const address = carried ? carried.ipv4 : addressText;
      const family = isIP(address) === 4 ? 'ipv4' : 'ipv6';
      if (cidrs.check(address, family)) return null;
      const range = special.find((range) => range.list.check(address, family));
      const notes = [
        carried && carried.form !== 'IPv4-mapped'
          ? `carried by the ${carried.form} address ${addressText}`
          : '',
        host === address || host === addressText ? '' : `of ${host}`,
      ].filter(Boolean);
      const of = notes.length === 0 ? '' : ` (${notes.join(', ')})`;
      if (range) {
        return `the address ${address}${of} is ${range.kind} (${range.cidr}), which relay.allowedDestinations allows only by a CIDR entry covering it`;
      }
      if (hosts.some((pattern) => hostMatches(pattern, host))) return null;
      return `the address ${address}${of} matches no entry of relay.allowedDestinations`;
    },
  };
}
