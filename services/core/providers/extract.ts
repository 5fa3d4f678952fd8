import { evaluatePointer } from './json-pointer.ts';
import { reject } from './rejection.ts';
import type { EventIdentity, ExtractOverrides, Identification } from './types.ts';
import { normaliseVersion } from './version.ts';

/** Where a provider finds a field by default; `label` names it in rejection messages. */
export interface Source<Args extends unknown[] = []> {
  readonly label: string;
  readonly read: (...args: Args) => unknown;
  /** The value comes from a header outside the signed content (only meaningful for the event id). */
  readonly unsigned?: boolean;
}

export interface IdentityDefaults {
  readonly eventId: Source;
  readonly eventType: Source;
  /** Used when no type is found; without it a missing type is refused. */
  readonly eventTypeFallback?: string;
  /** Receives the resolved event type, since several providers name the entity in it. */
  readonly entityType?: Source<[eventType: string]>;
  readonly entityId?: Source;
  readonly version?: Source;
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * An identifier as a non-empty string. Integers become their decimal string (Shopify ids are
 * numbers); integers beyond 2^53 are refused because JSON.parse has already rounded them,
 * and two entities would share one id.
 */
export function toIdentifier(value: unknown): string | null {
  if (typeof value === 'string') return value === '' ? null : value;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  return null;
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (typeof value === 'string') return 'an empty string';
  if (typeof value === 'number')
    return Number.isInteger(value) ? 'an integer too large to be exact' : 'a fraction';
  return Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}

interface Found {
  readonly value: unknown;
  readonly label: string;
}

function find<Args extends unknown[]>(
  body: unknown,
  pointer: string | undefined,
  key: keyof ExtractOverrides,
  source: Source<Args> | undefined,
  ...args: Args
): Found {
  // An override replaces the default outright: falling back would hide a wrong pointer.
  if (pointer !== undefined) {
    return { value: evaluatePointer(body, pointer), label: `the JSON pointer "${pointer}" (extract.${key})` };
  }
  return { value: source?.read(...args), label: source?.label ?? `extract.${key}, which is not configured` };
}

/**
 * Applies the endpoint's overrides over the provider's defaults. Entity type and id come as a
 * pair (one without the other keys nothing), and a version is only read for an entity.
 */
export function identifyEvent(
  body: unknown,
  overrides: ExtractOverrides | undefined,
  defaults: IdentityDefaults,
): Identification {
  const idFound = find(body, overrides?.eventId, 'eventId', defaults.eventId);
  const eventId = toIdentifier(idFound.value);
  if (eventId === null) {
    return reject(
      'event_id_missing',
      `The event id was expected in ${idFound.label}, which holds ${describe(idFound.value)}.`,
    );
  }

  const typeFound = find(body, overrides?.eventType, 'eventType', defaults.eventType);
  const eventType = toIdentifier(typeFound.value) ?? defaults.eventTypeFallback ?? null;
  if (eventType === null) {
    return reject(
      'event_type_missing',
      `The event type was expected in ${typeFound.label}, which holds ${describe(typeFound.value)}.`,
    );
  }

  let entityType = toIdentifier(
    find(body, overrides?.entityType, 'entityType', defaults.entityType, eventType).value,
  );
  let entityId = toIdentifier(find(body, overrides?.entityId, 'entityId', defaults.entityId).value);
  if (entityType === null || entityId === null) {
    entityType = null;
    entityId = null;
  }

  let entityVersion: string | null = null;
  if (entityId !== null) {
    const versionFound = find(body, overrides?.version, 'version', defaults.version);
    // Absent or null means "unversioned", not an error: many events carry no version.
    if (versionFound.value !== undefined && versionFound.value !== null) {
      const normalised = normaliseVersion(versionFound.value, versionFound.label);
      if (!normalised.ok) return normalised;
      entityVersion = normalised.version;
    }
  }

  const event: EventIdentity = {
    eventId,
    eventType,
    entityType,
    entityId,
    entityVersion,
    headers: defaults.headers,
    // An override is a JSON pointer into the signed body.
    idUnsigned: overrides?.eventId === undefined && defaults.eventId.unsigned === true,
  };
  return { ok: true, event };
}
