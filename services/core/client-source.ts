import { isIPv4, isIPv6 } from 'node:net';

// Who sent a request, as the gateway's replay-token limit and the console's sign-in limit count
// it: shared by both servers, so it lives in core.

/**
 * The source a request is counted under. With `trustedHops` = 0 it is the socket's peer (behind
 * an ingress, that is the ingress). With n > 0, the n-th X-Forwarded-For entry from the right:
 * each trusted proxy appends the address it saw, so entries further left are the client's own
 * words and never trusted. IPv6 sources count per /64, which one host usually holds whole.
 */
export function sourceOf(
  remoteAddress: string | undefined,
  forwardedFor: string | undefined,
  trustedHops: number,
): string {
  let address = remoteAddress ?? '';
  if (trustedHops > 0 && forwardedFor) {
    const hops = forwardedFor.split(',');
    // Fewer entries than trusted hops: the farthest one there is (what the nearest proxy saw).
    const entry = hops[Math.max(0, hops.length - trustedHops)]?.trim() ?? '';
    if (isIPv4(entry) || isIPv6(entry)) address = entry;
  }
  return normalize(address);
}

function normalize(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!isIPv6(address)) return address;
  // Expand `::`, then keep the first four groups (the /64).
  const [head = '', tail = ''] = address.split('%')[0]!.split('::');
  const left = head ? head.split(':') : [];
  const right = address.includes('::') && tail ? tail.split(':') : [];
  const groups = address.includes('::')
    ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right]
    : left;
  return `${groups
    .slice(0, 4)
    .map((group) => Number.parseInt(group, 16).toString(16))
    .join(':')}::/64`;
}
