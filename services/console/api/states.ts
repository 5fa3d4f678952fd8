import type { PauseState } from '../../core/pause/pause.ts';
import type { QuarantinedRow } from '../../core/quarantine/actions.ts';
import type { DeliveryRow } from '../../core/read-models/destinations-sql.ts';
import type { ShownEvent } from '../../core/read-models/events-sql.ts';
import { etagOf } from './etag.ts';

// The state each action depends on, as the entity tag its reads give and its If-Match checks: the
// fields the action's own function decides on (a status, a pause), nothing else.

export function eventEtag(event: Pick<ShownEvent, 'status' | 'attempts' | 'processed_at' | 'discarded_at'>) {
  return etagOf('event', [
    event.status,
    event.attempts,
    event.processed_at?.toISOString() ?? null,
    event.discarded_at?.toISOString() ?? null,
  ]);
}

export function deliveryEtag(delivery: Pick<DeliveryRow, 'status' | 'attempts' | 'settled_at'>) {
  return etagOf('delivery', [delivery.status, delivery.attempts, delivery.settled_at?.toISOString() ?? null]);
}

export function quarantineEtag(row: Pick<QuarantinedRow, 'released_at' | 'dropped_at' | 'reason'>) {
  return etagOf('quarantine', [
    row.released_at?.toISOString() ?? null,
    row.dropped_at?.toISOString() ?? null,
    row.reason,
  ]);
}

export function endpointEtag(pause: Pick<PauseState, 'paused_at'> | null | undefined) {
  return etagOf('endpoint', [pause?.paused_at.toISOString() ?? null]);
}

export function destinationEtag(
  state: { readonly paused: boolean; readonly changed_at: Date | null } | null,
) {
  return etagOf('destination', [state?.paused ?? false, state?.changed_at?.toISOString() ?? null]);
}
