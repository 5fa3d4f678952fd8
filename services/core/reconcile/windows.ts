import type { ReplayWindow } from '../replay/types.ts';

/**
 * [from, until) cut into windows of `length` ms, oldest first, the last one shorter: each is
 * listed on its own, so the watermark can move at the end of each.
 */
export function windowsBetween(from: Date, until: Date, length: number): ReplayWindow[] {
  const windows: ReplayWindow[] = [];
  for (let start = from.getTime(); start < until.getTime(); start += length) {
    windows.push({ since: new Date(start), until: new Date(Math.min(start + length, until.getTime())) });
  }
  return windows;
}
