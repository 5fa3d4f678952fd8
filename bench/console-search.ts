// The console's event search at inbox sizes an order of magnitude or two apart: every kind of
// search (test/support/console-inbox.ts) over HTTP against an in-process console, on the same
// machine in the same run. The figure that matters is the ratio of the large inbox's p95 to the
// small one's: an index lookup stays near 1 however large the table grows; a scan would grow
// with it. The absolute p95s are printed for the issue's 200 ms target, as context.
import { createHash } from 'node:crypto';
import pg from 'pg';
import { startConsole } from '../services/console/server.ts';
import { parseConfig } from '../services/core/config/load.ts';
import { createLogger } from '../services/core/logging.ts';
import { createBoss } from '../services/core/queue/boss.ts';
import { CONSOLE_ENDPOINTS, consoleSearches, fillConsoleInbox } from '../test/support/console-inbox.ts';
import type { BenchDatabase } from './processes.ts';

const TOKEN = 'console-bench-token-0123456789abcdef0123';

export interface ConsoleSearchOptions {
  /** Inbox sizes measured, smallest first. */
  readonly sizes: readonly number[];
  /** Searches of each kind per size (each with other values). */
  readonly runs: number;
  /** Every endpoint with `payloadSearch` (its payloads indexed), or none. */
  readonly payloadSearch: boolean;
}

interface Figures {
  readonly p50: number;
  readonly p95: number;
}

export interface ConsoleSearchReport {
  readonly payloadSearch: boolean;
  readonly sizes: ReadonlyArray<{
    rows: number;
    all: Figures;
    kinds: Record<string, Figures>;
    /** Per kind: the events the first page showed, summed over the runs (what a search finds at once). */
    shown: Record<string, number>;
  }>;
  /** p95 of every search at the largest size over p95 at the smallest. */
  readonly p95Ratio: number;
}

function percentile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(sorted.length * q) - 1))]!;
}

const figures = (values: readonly number[]): Figures => ({
  p50: percentile(values, 0.5),
  p95: percentile(values, 0.95),
});

export async function consoleSearchScenario(
  database: BenchDatabase,
  options: ConsoleSearchOptions,
): Promise<ConsoleSearchReport> {
  const config = parseConfig(
    {
      endpoints: Object.fromEntries(
        CONSOLE_ENDPOINTS.map((name) => [
          name,
          {
            provider: 'standard-webhooks',
            secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
            payloadSearch: options.payloadSearch,
          },
        ]),
      ),
      console: {
        port: 0,
        sessionSecret: 'bench-session-secret-0123456789abcdef0123',
        tokens: [{ name: 'bench', sha256: createHash('sha256').update(TOKEN).digest('hex') }],
        queryTimeout: '30s',
      },
    },
    {},
  );
  const boss = createBoss({
    connectionString: database.url,
    max: 2,
    supervise: false,
    applicationName: 'bench-console',
  });
  boss.on('error', () => {});
  await boss.start();
  const running = await startConsole({
    config,
    databaseUrl: database.url,
    boss,
    logger: createLogger('silent'),
    embedded: false,
    env: {},
  });
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  const sizes: Array<{
    rows: number;
    all: Figures;
    kinds: Record<string, Figures>;
    shown: Record<string, number>;
  }> = [];
  try {
    for (const rows of options.sizes) {
      await client.query('TRUNCATE hookgate.inbox, hookgate.delivery_counts');
      await fillConsoleInbox(client, rows, undefined, options.payloadSearch ? CONSOLE_ENDPOINTS : []);
      const byKind = new Map<string, number[]>();
      const shown: Record<string, number> = {};
      // One round unmeasured: the first reads of a fresh table come from disk.
      for (let seed = 0; seed <= options.runs; seed += 1) {
        for (const search of consoleSearches(rows, seed)) {
          const started = performance.now();
          const response = await fetch(new URL(`/events?${new URLSearchParams(search.query)}`, running.url), {
            headers: { authorization: `Bearer ${TOKEN}` },
          });
          const text = await response.text();
          if (response.status !== 200) throw new Error(`${search.name}: HTTP ${response.status}`);
          if (seed > 0)
            shown[search.name] =
              (shown[search.name] ?? 0) + Number(/(\d+) event\(s\) on this page/.exec(text)?.[1] ?? 0);
          if (seed > 0)
            byKind.set(search.name, [...(byKind.get(search.name) ?? []), performance.now() - started]);
        }
      }
      sizes.push({
        rows,
        all: figures([...byKind.values()].flat()),
        kinds: Object.fromEntries([...byKind.entries()].map(([name, values]) => [name, figures(values)])),
        shown,
      });
    }
  } finally {
    await client.end();
    await running.stop();
    await boss.stop({ graceful: false, close: true });
  }
  return { payloadSearch: options.payloadSearch, sizes, p95Ratio: sizes.at(-1)!.all.p95 / sizes[0]!.all.p95 };
}

export function renderConsoleSearch(report: ConsoleSearchReport): string[] {
  const lines = [
    `console event search (HTTP page times, ms; in brackets the events the first pages showed, over all runs); payloadSearch ${report.payloadSearch ? 'on for every endpoint' : 'off'}:`,
  ];
  const kinds = Object.keys(report.sizes[0]?.kinds ?? {});
  lines.push(
    `  ${'search'.padEnd(30)}${report.sizes.map((size) => `${`${size.rows} rows p50/p95`.padStart(26)}`).join('')}`,
  );
  for (const kind of kinds) {
    lines.push(
      `  ${kind.padEnd(30)}${report.sizes
        .map((size) =>
          `${size.kinds[kind]!.p50.toFixed(1)} / ${size.kinds[kind]!.p95.toFixed(1)} [${size.shown[kind] ?? 0}]`.padStart(
            26,
          ),
        )
        .join('')}`,
    );
  }
  lines.push(
    `  ${'all searches'.padEnd(30)}${report.sizes.map((size) => `${size.all.p50.toFixed(1)} / ${size.all.p95.toFixed(1)}`.padStart(26)).join('')}`,
  );
  lines.push(
    `  p95 at ${report.sizes.at(-1)!.rows} rows / p95 at ${report.sizes[0]!.rows} rows: ${report.p95Ratio.toFixed(2)}`,
  );
  return lines;
}
