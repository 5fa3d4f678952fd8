import { execFileSync } from 'node:child_process';
import { randomInt } from 'node:crypto';

/**
 * A network namespace of the test's own, joined to the host by a veth pair on a /30 of
 * 10.213.0.0/16, for network faults that stay inside what the test made: packets are dropped by
 * iptables rules in the namespace's own tables, on its end of the veth only (its loopback and the
 * host's own rules are never touched). Needs root, `ip` (iproute2) and `iptables` (`make
 * fault-tools`). Faults are DROPs, never REJECTs: a peer that vanished without a word, which is
 * what a partition or a dead host looks like.
 */
export interface Namespace {
  readonly name: string;
  /** The host's end of the veth. */
  readonly hostAddress: string;
  /** The namespace's end: what a server inside listens on. */
  readonly address: string;
  /** Drops every TCP packet to or from `port` on the veth, both ways. */
  partition(port: number): void;
  /** Drops this fraction of all packets on the veth, at random, in each direction. */
  loss(fraction: number): void;
  /** Removes every fault. */
  heal(): void;
  remove(): void;
}

const CHAIN = 'HOOKGATE_FAULTS';

function sh(file: string, args: readonly string[]): string {
  return execFileSync(file, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** What this machine can do, checked before a test relies on it; null when everything works. */
export function missingCapability(): string | null {
  if (process.getuid?.() !== 0) return 'network namespaces need root';
  for (const [file, args] of [
    ['ip', ['-V']],
    ['iptables', ['--version']],
  ] as const) {
    try {
      sh(file, args);
    } catch {
      return `${file} is missing (make fault-tools installs iproute2 and iptables)`;
    }
  }
  return null;
}

export function createNamespace(): Namespace {
  const missing = missingCapability();
  if (missing) throw new Error(`cannot make a network namespace: ${missing}`);
  // A /30 not in use on this host: 10.213.<n>.<4k>/30.
  const used = sh('ip', ['-o', '-4', 'addr', 'show']);
  let third = 0;
  let fourth = 0;
  for (let tries = 0; ; tries += 1) {
    third = randomInt(0, 256);
    fourth = randomInt(0, 64) * 4;
    if (!used.includes(`10.213.${third}.${fourth + 1}/`)) break;
    if (tries > 50) throw new Error('no free 10.213.x.y/30 for a test namespace');
  }
  const id = `${third.toString(16).padStart(2, '0')}${(fourth / 4).toString(16).padStart(2, '0')}`;
  const name = `hookgate-${id}`;
  const hostSide = `hg${id}h`;
  const nsSide = `hg${id}n`;
  const hostAddress = `10.213.${third}.${fourth + 1}`;
  const address = `10.213.${third}.${fourth + 2}`;
  const inside = (file: string, args: readonly string[]): string =>
    sh('ip', ['netns', 'exec', name, file, ...args]);

  sh('ip', ['netns', 'add', name]);
  const remove = (): void => {
    try {
      // Deleting the namespace deletes its end of the veth, and with it the host's end.
      sh('ip', ['netns', 'del', name]);
    } catch {
      // Already gone.
    }
  };
  const onExit = (): void => remove();
  process.once('exit', onExit);
  try {
    sh('ip', ['link', 'add', hostSide, 'type', 'veth', 'peer', 'name', nsSide]);
    sh('ip', ['link', 'set', nsSide, 'netns', name]);
    sh('ip', ['addr', 'add', `${hostAddress}/30`, 'dev', hostSide]);
    sh('ip', ['link', 'set', hostSide, 'up']);
    inside('ip', ['addr', 'add', `${address}/30`, 'dev', nsSide]);
    inside('ip', ['link', 'set', nsSide, 'up']);
    inside('ip', ['link', 'set', 'lo', 'up']);
    inside('iptables', ['-N', CHAIN]);
    inside('iptables', ['-A', 'INPUT', '-i', nsSide, '-j', CHAIN]);
    inside('iptables', ['-A', 'OUTPUT', '-o', nsSide, '-j', CHAIN]);
  } catch (error) {
    remove();
    process.off('exit', onExit);
    throw error;
  }
  return {
    name,
    hostAddress,
    address,
    partition(port) {
      inside('iptables', ['-A', CHAIN, '-p', 'tcp', '--dport', String(port), '-j', 'DROP']);
      inside('iptables', ['-A', CHAIN, '-p', 'tcp', '--sport', String(port), '-j', 'DROP']);
    },
    loss(fraction) {
      inside('iptables', [
        '-A',
        CHAIN,
        '-m',
        'statistic',
        '--mode',
        'random',
        '--probability',
        String(fraction),
        '-j',
        'DROP',
      ]);
    },
    heal() {
      inside('iptables', ['-F', CHAIN]);
    },
    remove() {
      remove();
      process.off('exit', onExit);
    },
  };
}
