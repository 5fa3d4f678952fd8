import type { VerifyReport } from './checks.ts';

const COLUMNS = [
  'processed',
  'ignored',
  'stale',
  'pending',
  'parked',
  'dead',
  'discarded',
  'missing',
] as const;

/** The short table `hookgate verify` prints, then the first few violations. */
export function renderReport(file: string, report: VerifyReport, shown = 10): string {
  const pad = (value: string | number, width: number) => String(value).padStart(width);
  const lines = [
    `${file}: ${report.deliveries} acknowledged deliveries of ${report.events} distinct events (${report.deliveries - report.events} repeats)`,
    `${'endpoint'.padEnd(20)}${pad('acked', 8)}${pad('events', 8)}${COLUMNS.map((c) => pad(c, 10)).join('')}${pad('pending*', 10)}`,
  ];
  for (const e of report.endpoints) {
    lines.push(
      `${e.endpoint.padEnd(20)}${pad(e.deliveries, 8)}${pad(e.events, 8)}${COLUMNS.map((c) => pad(e.statuses[c] ?? 0, 10)).join('')}${pad(e.pendingNotSent, 10)}`,
    );
  }
  lines.push('(pending*: pending rows of the endpoint that the file does not name)');
  const p = report.payments;
  lines.push(
    p.endpoints.length
      ? `payments (${p.endpoints.join(', ')}): ${p.unique} unique payments sent, ${p.booked} in billing.ledger_entries${p.paidAfterVoid ? `, ${p.paidAfterVoid} paid after void (not booked, by design)` : ''}`
      : 'payments: no billing endpoint in this run',
  );
  const v = report.versions;
  lines.push(
    v.endpoints.length
      ? `versions (${v.endpoints.join(', ')}): ${v.entities} entities, ${v.behind} behind the newest version sent, ${v.missing} without state`
      : 'versions: no projecting endpoint in this run',
  );
  if (report.ok) {
    lines.push(
      'OK: every acknowledged delivery is in the inbox once and settled, nothing pending, nothing lost or doubled.',
    );
  } else {
    lines.push(
      `FAILED: ${report.violationCount} violation${report.violationCount === 1 ? '' : 's'}; the first:`,
    );
    for (const violation of report.violations.slice(0, shown)) {
      lines.push(
        `  ${violation.kind.padEnd(20)}${violation.endpoint} ${violation.event_id ?? ''}: ${violation.detail}`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}
