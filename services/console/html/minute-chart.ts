import type { MinuteCount } from '../read-models/overview.ts';
import { type Html, html } from './html.ts';

const WIDTH = 360;
const HEIGHT = 64;
const MINUTES = 60;

/**
 * The last hour's deliveries as 60 one-minute columns, accepted below and duplicates stacked
 * above, drawn on the server as inline SVG (no script; colours come from the stylesheet's
 * classes, since the policy allows no inline style). Each column's <title> gives its figures.
 */
export function minuteChart(minutes: readonly MinuteCount[], since: Date, label: string): Html {
  const byMinute = new Map(minutes.map((row) => [Math.floor(row.minute.getTime() / 60_000), row]));
  const first = Math.floor(since.getTime() / 60_000);
  const columns = Array.from({ length: MINUTES }, (_, index) => {
    const row = byMinute.get(first + index);
    return {
      at: new Date((first + index) * 60_000),
      accepted: row?.accepted ?? 0,
      duplicate: row?.duplicate ?? 0,
    };
  });
  const peak = Math.max(1, ...columns.map((column) => column.accepted + column.duplicate));
  const step = WIDTH / MINUTES;
  const bars = columns.map((column, index) => {
    const x = (index * step).toFixed(1);
    const acceptedHeight = (column.accepted / peak) * (HEIGHT - 2);
    const duplicateHeight = (column.duplicate / peak) * (HEIGHT - 2);
    const time = column.at.toISOString().slice(11, 16);
    return html`<g><title>${time} UTC: ${column.accepted} accepted, ${column.duplicate} duplicate</title><rect class="bar-accepted" x="${x}" y="${(HEIGHT - acceptedHeight).toFixed(1)}" width="${(step - 1).toFixed(1)}" height="${acceptedHeight.toFixed(1)}"></rect><rect class="bar-duplicate" x="${x}" y="${(HEIGHT - acceptedHeight - duplicateHeight).toFixed(1)}" width="${(step - 1).toFixed(1)}" height="${duplicateHeight.toFixed(1)}"></rect></g>`;
  });
  return html`<svg class="chart" role="img" aria-label="${label}" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" xmlns="http://www.w3.org/2000/svg"><line class="axis" x1="0" y1="${HEIGHT - 0.5}" x2="${WIDTH}" y2="${HEIGHT - 0.5}"></line>${bars}</svg>`;
}
