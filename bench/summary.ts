import type { ApplyReport } from './apply.ts';
import { INGEST_GOAL, type IngestReport } from './ingest.ts';

// The table: each headline figure of this run beside its goal. Ratios are against
// baselines measured in this same run by the same generator; CPU per 1 000 events stands
// beside each throughput.

const fixed = (value: number | undefined, digits: number): string =>
  value === undefined || !Number.isFinite(value) ? 'n/a' : value.toFixed(digits);

function median(values: readonly number[]): number {
  const sorted = [...values].filter(Number.isFinite).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

const verdict = (met: boolean | null): string => (met === null ? 'not measured' : met ? 'met' : 'NOT met');

export function renderSummary(ingest: IngestReport | null, apply: ApplyReport | null): string[] {
  const rows: string[][] = [['figure', 'this run', 'CPU s per 1k (this run)', 'goal', '']];
  if (apply) {
    const h = apply.hookgate.cpu.per1k;
    const b = apply.baseline.cpu.per1k;
    rows.push([
      'apply: events/s vs 1-tx-per-event SKIP LOCKED baseline, same handler',
      `${fixed(apply.ratio, 2)}x (${fixed(apply.hookgate.perSecond, 0)} vs ${fixed(apply.baseline.perSecond, 0)}/s)`,
      `hookgate worker ${fixed(h.worker, 3)} pg ${fixed(h.postgres, 3)}; baseline worker ${fixed(b.worker, 3)} pg ${fixed(b.postgres, 3)}`,
      '>= 4x',
      verdict(apply.ratio >= 4),
    ]);
  }
  if (ingest) {
    const gatewayUs = median(ingest.cpuPer1k.hookgate.map((r) => (r.process ?? Number.NaN) * 1000));
    const bareUs = median(ingest.cpuPer1k.bareExpress.map((r) => (r.process ?? Number.NaN) * 1000));
    const pg = median(ingest.cpuPer1k.hookgate.map((r) => r.postgres ?? Number.NaN));
    rows.push([
      'ingest: accepted/s vs bare Express 5, same generator (median of rounds)',
      `${fixed(ingest.ratio, 2)}x`,
      `gateway ${fixed(gatewayUs / 1000, 3)} pg ${fixed(pg, 3)}; bare express ${fixed(bareUs / 1000, 3)}`,
      `>= ${INGEST_GOAL}x`,
      verdict(ingest.ratio >= INGEST_GOAL),
    ]);
    rows.push([
      'gateway CPU per acknowledged delivery at saturation (/proc, median of rounds)',
      `${fixed(gatewayUs, 0)} us (bare Express: ${fixed(bareUs, 0)} us)`,
      '',
      '<= 50 us',
      verdict(gatewayUs <= 50),
    ]);
  }
  if (apply) {
    const e2e = apply.endToEnd;
    rows.push([
      `end-to-end p99 (received -> processed) at ${e2e?.targetRate ?? 1000} evenly spaced events/s`,
      e2e
        ? `${fixed(e2e.p99Ms, 0)} ms (p50 ${fixed(e2e.p50Ms, 0)} ms; rate ${e2e.reached ? 'reached' : 'NOT reached'}; verify ${e2e.verify.ok ? 'OK' : 'FAILED'})`
        : 'skipped',
      e2e
        ? `gateway ${fixed(e2e.cpu.per1k.gateway, 3)} workers ${fixed(e2e.cpu.per1k.worker, 3)} pg ${fixed(e2e.cpu.per1k.postgres, 3)}`
        : '',
      '<= 500 ms',
      verdict(e2e ? e2e.p99Ms <= 500 && e2e.reached && e2e.verify.ok : null),
    ]);
  }
  if (rows.length === 1) return [];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  const line = (row: string[]) =>
    `| ${row.map((cell, column) => cell.padEnd(widths[column]!)).join(' | ')} |`;
  return [
    "summary (the issue's table; every ratio against a baseline of this same run):",
    line(rows[0]!),
    `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
    ...rows.slice(1).map(line),
  ];
}
