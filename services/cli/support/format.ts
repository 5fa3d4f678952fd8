import { jsonText } from '../../core/json-text.ts';
import { terminalJson, terminalText } from './terminal-text.ts';

/** `3m12s`, `2h05m`, `4d03h`, `850ms`: an age an operator reads at a glance. */
export function age(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '-';
  if (seconds < 1) return `${Math.round(seconds * 1000)}ms`;
  const s = Math.floor(seconds);
  const days = Math.floor(s / 86_400);
  const hours = Math.floor((s % 86_400) / 3_600);
  const minutes = Math.floor((s % 3_600) / 60);
  const rest = s % 60;
  const pad = (n: number) => String(n).padStart(2, '0');
  if (days > 0) return `${days}d${pad(hours)}h`;
  if (hours > 0) return `${hours}h${pad(minutes)}m`;
  if (minutes > 0) return `${minutes}m${pad(rest)}s`;
  return `${rest}s`;
}

/** `12.5%`, or `-` when nothing was received. */
export function percent(ratio: number | null): string {
  if (ratio === null || !Number.isFinite(ratio)) return '-';
  return `${(ratio * 100).toFixed(ratio < 0.001 && ratio > 0 ? 3 : 1)}%`;
}

const NUMERIC = /^-?[\d.,]+(ms|s|m|h|d|%)?[\d]*[smhd]?$/;

/**
 * An aligned text table: numbers right-aligned, text left-aligned, two spaces between columns.
 * Cells are escaped for the terminal (terminalText), so none can break a row or act on the screen.
 */
export function table(headers: readonly string[], rawRows: readonly (readonly string[])[]): string {
  const rows = rawRows.map((row) => row.map(terminalText));
  const widths = headers.map((header, column) =>
    Math.max(header.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  // A column is numeric when every value it has is a number: its `-` placeholders align with
  // the numbers; in a text column they stay at the left, where the text would start.
  const numeric = headers.map((_, column) => {
    const values = rows.map((row) => row[column] ?? '').filter((cell) => cell !== '-' && cell !== '');
    return values.length > 0 && values.every((cell) => NUMERIC.test(cell));
  });
  const line = (cells: readonly string[], heading = false) =>
    cells
      .map((cell, column) => {
        const width = widths[column] ?? 0;
        const right = !heading && numeric[column] && (cell === '-' || NUMERIC.test(cell));
        return right ? cell.padStart(width) : cell.padEnd(width);
      })
      .join('  ')
      .trimEnd();
  return `${[line(headers, true), ...rows.map((row) => line(row))].join('\n')}\n`;
}

/**
 * One value on stdout for scripts: pretty enough to read, valid for `jq`, whatever a payload in it
 * holds (nested deeper than JSON.stringify can write: json-text.ts).
 */
export function printJson(value: unknown): void {
  process.stdout.write(`${terminalJson(jsonText(value))}\n`);
}

/** `1 delivery`, `3 deliveries`: a count in words an operator reads, not `delivery(ies)`. */
export function plural(count: number, one: string, many: string): string {
  return `${count} ${count === 1 ? one : many}`;
}
