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

/**
 * The headers a provider's own definition names, by what they carry (lower-case names). Every
 * provider has them (Provider.headerRules): the scheme presets and `scheme` derive them from their
 * spec (scheme.ts), the hand-written providers list them beside their code. Whatever a delivery
 * carries beyond them is never stored.
 */
export interface HeaderRules {
  /**
   * Read to identify a delivery or to check its time: its id, type, entity and version headers,
   * its timestamp header, headers the signature covers (Twitch's message id). Kept with a
   * quarantined delivery, so a release identifies it again from what it was received with.
   */
  readonly identity: readonly string[];
  /** Kept with the event for reading (topic, retry count, hook id). */
  readonly delivery: readonly string[];
  /** Carry the signature or the shared token itself (GitLab's, Okta's, Postmark's): never kept. */
  readonly secret: readonly string[];
}

/** Credentials of the request, whatever the provider says: never kept either. */
const CREDENTIALS = ['authorization', 'proxy-authorization', 'cookie', 'x-hookgate-replay-token'];

// A safety net under the delivery lists (names chosen for reading, not for identifying): a name
// that could carry a signature or credential is not kept, whoever listed it.
const SECRET_LOOKING = /signature|hmac|authorization|cookie|secret|token/i;

function lower(names: readonly string[]): string[] {
  return names.map((name) => name.toLowerCase());
}

/** Rules from lists as written: lower-cased, each name once, no secret one among the others. */
export function headerRules(rules: {
  readonly identity?: readonly (string | undefined)[];
  readonly delivery?: readonly (string | undefined)[];
  readonly secret: readonly string[];
}): HeaderRules {
  const secret = [...new Set(lower(rules.secret))];
  const named = (names: readonly (string | undefined)[] | undefined) =>
    [...new Set(lower((names ?? []).filter((name) => name !== undefined)))].filter(
      (name) => !secret.includes(name),
    );
  return { identity: named(rules.identity), delivery: named(rules.delivery), secret };
}

function pick(headers: HeaderBag, names: Iterable<string>, rules: HeaderRules): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const name of names) {
    const key = name.toLowerCase();
    if (rules.secret.includes(key) || CREDENTIALS.includes(key)) continue;
    const value = headers[key];
    if (value !== undefined) kept[key] = value;
  }
  return kept;
}

function deliveryNames(rules: HeaderRules): string[] {
  return rules.delivery.filter((name) => !SECRET_LOOKING.test(name));
}

/** The headers kept with an inbox event: the provider's delivery headers that are present. */
export function eventHeaders(headers: HeaderBag, rules: HeaderRules): Record<string, string> {
  return pick(headers, deliveryNames(rules), rules);
}

/**
 * The headers kept with a quarantined delivery: its identity headers (what a release reads to
 * identify it again; their values become the event's id and type anyway) and its delivery
 * headers, those present. Never a signature, a token or a credential.
 */
export function quarantineHeaders(headers: HeaderBag, rules: HeaderRules): Record<string, string> {
  return pick(headers, new Set([...rules.identity, ...deliveryNames(rules)]), rules);
}
