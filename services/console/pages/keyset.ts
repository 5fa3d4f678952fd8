/**
 * The cursor of the quarantine and audit pages' `Older →` link: the last row's time to the
 * microsecond (as PostgreSQL spells it in UTC; a Date would cut it to milliseconds and skip rows)
 * and its id, `<time>_<id>`. Anything else reads as no cursor (the newest page).
 */
export interface TimeIdCursor {
  readonly at: string;
  readonly id: string;
}

export function encodeTimeId(at: string, id: string): string {
  return `${at}_${id}`;
}

export function decodeTimeId(text: unknown): TimeIdCursor | undefined {
  if (typeof text !== 'string') return undefined;
  const match = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?Z)_(\d{1,19})$/.exec(text);
  if (!match) return undefined;
  return Number.isNaN(new Date(match[1]!).getTime()) ? undefined : { at: match[1]!, id: match[2]! };
}

/** A text field of a GET form, trimmed and bounded; empty means unset. */
export function queryText(value: unknown, max = 200): string {
  return typeof value === 'string' ? value.trim().slice(0, max) : '';
}
