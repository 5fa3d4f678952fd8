import { APPLY_GOAL, type ApplyReport } from './apply.ts';
import type { BytesReport } from './bytes.ts';
import { GATEWAY_CPU_GOAL, INGEST_GOAL, type IngestReport } from './ingest.ts';

// The performance issue's table: each headline figure of this run beside its goal. Ratios are
// against baselines measured in this same run by the same generator; CPU per 1 000 events stands
// beside each throughput.

/** The goals of the batch-dispatch issue, in the units the table prints. */
export const GOALS = {
  ingestRatio: INGEST_GOAL,
  postgresMicrosPerDelivery: 70,
  gatewayCpuRatio: GATEWAY_CPU_GOAL,
  applyRatio: APPLY_GOAL,
  endToEndP99Ms: 500,
  endToEndCpuMsPerEvent: 0.8,
  jobsPerEvent: 0.1,
  bytesPerEvent: 900,
} as const;

const fixed = (value: number | undefined, digits: number): string =>
  value === undefined || !Number.isFinite(value) ? 'n/a' : value.toFixed(digits);

function median(values: readonly number[]): number {
  const sorted = [...values].filter(Number.isFinite).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

const verdict = (met: boolean | null): string => (met === null ? 'not measured' : met ? 'met' : 'NOT met');

export function renderSummary(
  ingest: IngestReport | null,
  apply: ApplyReport | null,
  bytes: BytesReport | null,
): string[] {
  const rows: string[][] = [['figure', 'this run', 'CPU s per 1k (this run)', 'goal', '']];
  if (ingest) {
    const gatewayUs = median(ingest.cpuPer1k.hookgate.map((r) => (r.process ?? Number.NaN) * 1000));
    const bareUs = median(ingest.cpuPer1k.bareExpress.map((r) => (r.process ?? Number.NaN) * 1000));
    const pgUs = median(ingest.cpuPer1k.hookgate.map((r) => (r.postgres ?? Number.NaN) * 1000));
    const cpu = `gateway ${fixed(gatewayUs / 1000, 3)} pg ${fixed(pgUs / 1000, 3)}; bare express ${fixed(bareUs / 1000, 3)}`;
    rows.push(
      [
        'ingest: accepted/s vs bare Express 5, same generator (median of rounds)',
        `${fixed(ingest.ratio, 2)}x`,
        cpu,
        `>= ${GOALS.ingestRatio}x`,
        verdict(ingest.ratio >= GOALS.ingestRatio),
      ],
      [
        `PostgreSQL CPU per acknowledged delivery at ingest (${ingest.settings.duplicateShare * 100}% duplicates; /proc, median of rounds)`,
        `${fixed(pgUs, 0)} us`,
        '',
        `<= ${GOALS.postgresMicrosPerDelivery} us`,
        verdict(pgUs <= GOALS.postgresMicrosPerDelivery),
      ],
      [
        'gateway CPU per acknowledged delivery vs bare Express per request, same run (median of per-round ratios; median us)',
        `${fixed(ingest.gatewayCpuRatio, 2)}x (${fixed(gatewayUs, 0)} vs ${fixed(bareUs, 0)} us)`,
        '',
        `<= ${GOALS.gatewayCpuRatio}x`,
        verdict(ingest.gatewayCpuRatio <= GOALS.gatewayCpuRatio),
      ],
    );
  }
  if (apply) {
    const h = apply.hookgate.cpu.per1k;
    const b = apply.baseline.cpu.per1k;
    rows.push([
      'apply: events/s vs 1-tx-per-event SKIP LOCKED baseline, same handler',
      `${fixed(apply.ratio, 2)}x (${fixed(apply.hookgate.perSecond, 0)} vs ${fixed(apply.baseline.perSecond, 0)}/s)`,
      `hookgate worker ${fixed(h.worker, 3)} pg ${fixed(h.postgres, 3)}; baseline worker ${fixed(b.worker, 3)} pg ${fixed(b.postgres, 3)}`,
      `>= ${GOALS.applyRatio}x`,
      verdict(apply.ratio >= GOALS.applyRatio),
    ]);
    const e2e = apply.endToEnd;
    const cpuMs = e2e ? Object.values(e2e.cpu.per1k).reduce((sum, v) => sum + v, 0) : Number.NaN;
    const clean = e2e ? e2e.load.non2xx === 0 && e2e.load.errors === 0 && e2e.load.dropped === 0 : false;
    rows.push(
      [
        `end to end: ${e2e?.targetRate ?? 0} evenly spaced billing events/s for ${apply.settings.seconds} s, gateway + ${apply.settings.workers} workers: p99 received -> processed`,
        e2e
          ? `${fixed(e2e.p99Ms, 0)} ms (p50 ${fixed(e2e.p50Ms, 0)} ms; rate ${e2e.reached ? 'reached' : 'NOT reached'}; ${clean ? 'no errors' : `non-2xx ${e2e.load.non2xx}, errors ${e2e.load.errors}, dropped ${e2e.load.dropped}`}; verify ${e2e.verify.ok ? 'OK' : 'FAILED'})`
          : 'skipped',
        e2e
          ? `gateway ${fixed(e2e.cpu.per1k.gateway, 3)} workers ${fixed(e2e.cpu.per1k.worker, 3)} pg ${fixed(e2e.cpu.per1k.postgres, 3)}`
          : '',
        `<= ${GOALS.endToEndP99Ms} ms, no errors, verify OK`,
        verdict(e2e ? e2e.p99Ms <= GOALS.endToEndP99Ms && e2e.reached && clean && e2e.verify.ok : null),
      ],
      [
        'end to end: CPU per event, gateway + workers + PostgreSQL',
        e2e ? `${fixed(cpuMs, 3)} ms` : 'skipped',
        '',
        `<= ${GOALS.endToEndCpuMsPerEvent} ms`,
        verdict(e2e ? cpuMs <= GOALS.endToEndCpuMsPerEvent : null),
      ],
      [
        'end to end: pg-boss job rows written per accepted event',
        e2e
          ? `${fixed(e2e.jobs.perEvent, 3)} (${Object.entries(e2e.jobs.byKind)
              .map(([kind, n]) => `${kind} ${n}`)
              .join(', ')} for ${e2e.events} events)`
          : 'skipped',
        '',
        `<= ${GOALS.jobsPerEvent}`,
        verdict(e2e ? e2e.jobs.perEvent <= GOALS.jobsPerEvent : null),
      ],
    );
  }
  if (bytes) {
    const o = bytes.overheadPerEvent;
    const beyond = o.inbox + o.pgboss + o.deliveries;
    rows.push([
      `bytes per event beyond the payload after ${bytes.events} billing events (inbox + pg-boss's retained jobs + delivery records)`,
      `${fixed(beyond, 0)} B (inbox ${fixed(o.inbox, 0)}, pg-boss ${fixed(o.pgboss, 0)}, deliveries ${fixed(o.deliveries, 0)})`,
      '',
      `<= ${GOALS.bytesPerEvent} B`,
      verdict(beyond <= GOALS.bytesPerEvent),
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
