// CPU seconds per process from /proc (Linux): what each process spent during a measured
// window, so every throughput figure can say what it cost in CPU.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import type pg from 'pg';

let ticksPerSecond: number | null = null;

function ticks(): number {
  ticksPerSecond ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  return ticksPerSecond;
}

interface ProcStat {
  readonly ppid: number;
  /** utime + stime, seconds. */
  readonly own: number;
  /** cutime + cstime: children that exited and were waited for, seconds. */
  readonly children: number;
}

function procStat(pid: number): ProcStat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // The command name may hold spaces and parentheses: fields start after the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const n = (i: number) => Number(fields[i - 3]);
  return { ppid: n(4), own: (n(14) + n(15)) / ticks(), children: (n(16) + n(17)) / ticks() };
}

/** CPU seconds a process has used so far (itself only). */
export function processCpu(pid: number | undefined): number {
  return pid === undefined ? Number.NaN : (procStat(pid)?.own ?? Number.NaN);
}

/**
 * PostgreSQL's CPU so far: the postmaster, its live children (backends, walwriter,
 * checkpointer…) and the children that already exited (cutime/cstime).
 */
export function postgresCpu(postmasterPid: number | null): number {
  if (postmasterPid === null) return Number.NaN;
  const postmaster = procStat(postmasterPid);
  if (!postmaster) return Number.NaN;
  let total = postmaster.own + postmaster.children;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = procStat(Number(entry));
    if (stat?.ppid === postmasterPid) total += stat.own;
  }
  return total;
}

/** The postmaster's pid when PostgreSQL runs on this machine (the parent of our backend). */
export async function postmasterPid(db: pg.Client): Promise<number | null> {
  const backend = (await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  const stat = procStat(backend);
  return stat ? stat.ppid : null;
}

/** CPU seconds per process over a window: `const done = cpuWindow({...}); …; done()`. */
export function cpuWindow(sources: Readonly<Record<string, () => number>>): () => Record<string, number> {
  const before = Object.fromEntries(Object.entries(sources).map(([name, read]) => [name, read()]));
  return () =>
    Object.fromEntries(Object.entries(sources).map(([name, read]) => [name, read() - before[name]!]));
}

/** CPU seconds per 1 000 units of work (deliveries or events), rounded for reports. */
export function per1k(cpuSeconds: number, units: number): number {
  return units > 0 ? Math.round((cpuSeconds / units) * 1000 * 1000) / 1000 : Number.NaN;
}

/** `{ gateway: 12.3, postgres: 4.5 }` CPU seconds → per 1k units. */
export function perThousand(cpu: Readonly<Record<string, number>>, units: number): Record<string, number> {
  return Object.fromEntries(Object.entries(cpu).map(([name, seconds]) => [name, per1k(seconds, units)]));
}
