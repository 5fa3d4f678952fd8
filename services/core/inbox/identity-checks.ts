import type { EventIdentity } from '../providers/types.ts';

/** Matches the inbox's CHECK; a longer id could never be stored, so it is refused up front. */
export const MAX_EVENT_ID_LENGTH = 512;

// C0 controls (tab included), DEL and C1 controls.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

export interface IdentityProblem {
  readonly code: 'event_id_invalid' | 'event_type_invalid';
  readonly message: string;
}

/**
 * What no event may carry in its id or its type, whichever path stores it (the gateway, the
 * replay). Both are text operators type, grep and print, and the type is a metric label and a
 * header the relay sends: control characters (newlines that forge log lines, ESC sequences that
 * act on a terminal, NUL that PostgreSQL refuses) and lone surrogates have no business in either.
 */
export function identityProblem(event: Pick<EventIdentity, 'eventId' | 'eventType'>): IdentityProblem | null {
  const id = event.eventId;
  if (id.length > MAX_EVENT_ID_LENGTH) {
    return {
      code: 'event_id_invalid',
      message: `The event id is longer than ${MAX_EVENT_ID_LENGTH} characters.`,
    };
  }
  if (CONTROL.test(id) || !id.isWellFormed() || id.trim() === '') {
    return {
      code: 'event_id_invalid',
      message: 'The event id is blank, or contains control characters or invalid Unicode.',
    };
  }
  const type = event.eventType;
  if (CONTROL.test(type) || !type.isWellFormed() || type.trim() === '') {
    return {
      code: 'event_type_invalid',
      message: 'The event type is blank, or contains control characters or invalid Unicode.',
    };
  }
  return null;
}
