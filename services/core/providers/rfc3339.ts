/** An RFC 3339 date-time read exactly: whole UTC seconds since the epoch and the fraction's digits. */
export interface Rfc3339Instant {
  readonly seconds: number;
  /** The fraction of a second as written (up to 9 digits, possibly none). */
  readonly fraction: string;
}

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})([Tt ])(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

/**
 * Parses an RFC 3339 date-time (the one parser of providers' timestamps and entity versions).
 * Refuses a leap second (60: it has no epoch representation to order by), dates that do not
 * exist and offsets beyond 23:59. `spaceSeparator` also takes a space between date and time, as
 * RFC 3339's note allows and some senders write; signed timestamps keep to `T`.
 */
export function parseRfc3339(
  text: string,
  options: { readonly spaceSeparator: boolean },
): Rfc3339Instant | null {
  const m = RFC3339.exec(text);
  if (m === null || (m[4] === ' ' && !options.spaceSeparator)) return null;
  const [year, month, day] = [m[1], m[2], m[3]].map(Number) as [number, number, number];
  const [hour, minute, second] = [m[5], m[6], m[7]].map(Number) as [number, number, number];
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return null;
  const date = new Date(0);
  // setUTCFullYear, unlike Date.UTC, does not map years 0–99 to 1900–1999.
  date.setUTCFullYear(year, month - 1, day);
  if (date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return null;
  date.setUTCHours(hour, minute, second, 0);
  let offsetSeconds = 0;
  if (m[9] !== undefined) {
    const hours = Number(m[10]);
    const minutes = Number(m[11]);
    if (hours > 23 || minutes > 59) return null;
    offsetSeconds = (m[9] === '-' ? -1 : 1) * (hours * 3600 + minutes * 60);
  }
  // Local time = UTC + offset, so UTC = local - offset.
  return { seconds: date.getTime() / 1000 - offsetSeconds, fraction: m[8] ?? '' };
}
