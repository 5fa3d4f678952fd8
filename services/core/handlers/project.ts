import { z } from 'zod';
import { evaluatePointer, isJsonPointer } from '../providers/json-pointer.ts';
import { parseHandlerOptions } from './handler-options.ts';
import type { HandlerDeps } from './index.ts';
import {
  type ApplyOutcome,
  EntityNotYetKnown,
  EventUnusable,
  type Handler,
  type InboxEvent,
} from './types.ts';

export const projectOptionsSchema = z.strictObject({
  /** Entity type used when the endpoint's extraction gives none. */
  entityType: z.string().min(1).max(200).default('entity'),
  /** JSON pointer into the verified payload naming the state to store; '' stores the whole body. */
  state: z.string().refine(isJsonPointer, 'must be a JSON pointer such as /data').default(''),
  /**
   * Event types allowed to create an entity. When set, any other event for an entity with no
   * state yet throws EntityNotYetKnown (retried, then `parked` until requeued), instead of
   * creating the entity from a partial update.
   */
  createOn: z.array(z.string().min(1)).min(1).optional(),
});

/**
 * Latest state wins, by version, whatever the arrival order. The WHERE on the conflict branch
 * is the guard: an older or equal version changes nothing and the event settles as `stale`.
 */
export const UPSERT_ENTITY_STATE = `
  INSERT INTO hookgate.entity_state AS s (endpoint, entity_type, entity_id, version, state, event_id, updated_at)
  VALUES ($1, $2, $3, $4::bigint, $5::jsonb, $6, now())
  ON CONFLICT (endpoint, entity_type, entity_id) DO UPDATE
    SET version = EXCLUDED.version, state = EXCLUDED.state, event_id = EXCLUDED.event_id, updated_at = now()
    WHERE s.version < EXCLUDED.version`;

/** For events that may not create: only an existing, older entity moves forward. */
export const UPDATE_ENTITY_STATE = `
  UPDATE hookgate.entity_state AS s
     SET version = $4::bigint, state = $5::jsonb, event_id = $6, updated_at = now()
   WHERE s.endpoint = $1 AND s.entity_type = $2 AND s.entity_id = $3 AND s.version < $4::bigint`;

export const ENTITY_EXISTS = `
  SELECT 1 FROM hookgate.entity_state WHERE endpoint = $1 AND entity_type = $2 AND entity_id = $3`;

/**
 * An event the projection cannot key is a configuration problem (no `extract.entityId` or
 * `extract.version`, or a payload without them). It is thrown, not ignored: the event ends `dead`
 * at once with this reason (retrying cannot key it), and can be requeued once the configuration
 * is fixed.
 */
export class ProjectionUnkeyed extends EventUnusable {
  constructor(message: string) {
    super('projection_unkeyed', message);
  }
}

export function createProjectHandler(options: unknown, deps: HandlerDeps): Handler {
  const settings = parseHandlerOptions(projectOptionsSchema, options, deps.endpoint);
  const createOn = settings.createOn ? new Set(settings.createOn) : null;

  return {
    name: 'project',
    async apply({ tx }, event: InboxEvent): Promise<ApplyOutcome> {
      if (event.entityId === null) {
        throw new ProjectionUnkeyed(
          `event ${event.eventId} carries no entity id; configure extract.entityId for endpoint ${event.endpoint}`,
        );
      }
      if (event.entityVersion === null) {
        throw new ProjectionUnkeyed(
          `event ${event.eventId} carries no version; configure extract.version for endpoint ${event.endpoint}`,
        );
      }
      const state = evaluatePointer(event.payload, settings.state);
      const key = [event.endpoint, event.entityType ?? settings.entityType, event.entityId] as const;
      const values = [...key, event.entityVersion, JSON.stringify(state ?? null), event.eventId];
      if (createOn && !createOn.has(event.eventType)) {
        const updated = await tx.query(UPDATE_ENTITY_STATE, values);
        if (updated.rowCount) return 'processed';
        const exists = await tx.query(ENTITY_EXISTS, [...key]);
        if (!exists.rowCount) {
          throw new EntityNotYetKnown(
            `${key[1]} ${key[2]} has no state yet and ${event.eventType} may not create it`,
          );
        }
        return 'stale';
      }
      const result = await tx.query(UPSERT_ENTITY_STATE, values);
      return result.rowCount ? 'processed' : 'stale';
    },
  };
}
