import type { HeaderBag } from './types.ts';

/** A header's value, or `undefined` when absent or blank (a blank header carries nothing to check). */
export function headerValue(headers: HeaderBag, name: string): string | undefined {
  const value = headers[name.toLowerCase()];
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  return trimmed === '' ? undefined : trimmed;
}

/** The first of several header names that is present, for providers that renamed their headers. */
export function firstHeader(headers: HeaderBag, names: readonly string[]): string | undefined {
  for (const name of names) {
    const value = headerValue(headers, name);
    if (value !== undefined) return value;
  }
  return undefined;
}

// A safety net under each provider's keep-list: signatures must never reach storage.
const SECRET_LOOKING = /signature|hmac|authorization|cookie|secret|token/i;

/** The listed headers that are present, minus anything that could carry a signature or credential. */
export function keepHeaders(
  headers: HeaderBag,
  names: readonly string[],
  alsoRefuse: readonly string[] = [],
): Record<string, string> {
  const refused = new Set(alsoRefuse.map((name) => name.toLowerCase()));
  const kept: Record<string, string> = {};
  for (const name of names) {
    const key = name.toLowerCase();
    if (SECRET_LOOKING.test(key) || refused.has(key)) continue;
    const value = headers[key];
    if (value !== undefined) kept[key] = value;
  }
  return kept;
}
