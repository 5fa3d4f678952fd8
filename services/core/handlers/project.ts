import { projectOptionsSchema } from '../config/handlers-schema.ts';
import { evaluatePointer } from '../providers/json-pointer.ts';
import { parseHandlerOptions } from './handler-options.ts';
import type { HandlerDeps } from './index.ts';
import {
  type BatchContext,
  type BatchEventResult,
  EntityNotYetKnown,
  EventUnusable,
  type Handler,
  type InboxEvent,
  roundsByKey,
} from './types.ts';

// Latest state wins, by version, whatever the arrival order: each write's WHERE is the guard (an
// older or equal version changes nothing and the event settles as `stale`). A batch is split into
// rounds holding at most one event per entity (see applyBatch), so no statement touches an
// entity twice. Each returns the entities it wrote, as `entity_type, entity_id`.

/** Arbitrary fixed class id ('proj') of the per-entity advisory locks of batches. */
export const ENTITY_LOCK_CLASS = 0x70726f6a;

/**
 * Locks every entity of a batch before its first write, in one order every batch shares (the
 * keys' hashes, sorted), as billing's LOCK_INVOICES does: a batch writes its entities round by
 * round, so two batches sharing entities in different orders could each hold one the other
 * wants next, until PostgreSQL's deadlock check (1 s) failed one of them. The engine's
 * event-by-event rerun of a failed batch runs with the batch's locks still held (`lockBatch`).
 */
export const LOCK_ENTITIES = `
  SELECT pg_advisory_xact_lock($2::int, k.key)
    FROM (SELECT DISTINCT hashtext($1 || '/' || t || '/' || i) AS key
            FROM unnest($3::text[], $4::text[]) AS e(t, i)) k
   ORDER BY k.key`;

/** Creates or moves forward each entity of a round. */
export const UPSERT_ENTITY_STATES = `
  INSERT INTO hookgate.entity_state AS s (endpoint, entity_type, entity_id, version, state, event_id, updated_at)
  SELECT $1, e.entity_type, e.entity_id, e.version, e.state::jsonb, e.event_id, now()
    FROM unnest($2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[])
         WITH ORDINALITY AS e(entity_type, entity_id, version, state, event_id, ord)
   ORDER BY e.ord
  ON CONFLICT (endpoint, entity_type, entity_id) DO UPDATE
    SET version = EXCLUDED.version, state = EXCLUDED.state, event_id = EXCLUDED.event_id, updated_at = now()
    WHERE s.version < EXCLUDED.version
  RETURNING s.entity_type, s.entity_id`;

/** For events that may not create: only an existing, older entity moves forward. */
export const UPDATE_ENTITY_STATES = `
  UPDATE hookgate.entity_state AS s
     SET version = e.version, state = e.state::jsonb, event_id = e.event_id, updated_at = now()
    FROM unnest($2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[])
         AS e(entity_type, entity_id, version, state, event_id)
   WHERE s.endpoint = $1 AND s.entity_type = e.entity_type AND s.entity_id = e.entity_id
     AND s.version < e.version
  RETURNING s.entity_type, s.entity_id`;

/** The entities of a round that have a state. */
export const ENTITIES_EXISTING = `
  SELECT s.entity_type, s.entity_id
    FROM unnest($2::text[], $3::text[]) AS e(entity_type, entity_id)
    JOIN hookgate.entity_state s
      ON s.endpoint = $1 AND s.entity_type = e.entity_type AND s.entity_id = e.entity_id`;

/** An event keyed for the projection: its position in the batch and what it writes. */
interface Keyed {
  readonly index: number;
  readonly event: InboxEvent;
  readonly entityType: string;
  readonly entityId: string;
  readonly version: string;
  readonly state: string;
}

const entityKey = (type: string, id: string): string => `${type}\u0000${id}`;

async function entitiesOf(tx: BatchContext['tx'], sql: string, params: unknown[]): Promise<Set<string>> {
  const result = await tx.query<{ entity_type: string; entity_id: string }>(sql, params);
  return new Set(result.rows.map((row) => entityKey(row.entity_type, row.entity_id)));
}

function roundParams(endpoint: string, round: readonly Keyed[]): unknown[] {
  return [
    endpoint,
    round.map((k) => k.entityType),
    round.map((k) => k.entityId),
    round.map((k) => k.version),
    round.map((k) => k.state),
    round.map((k) => k.event.eventId),
  ];
}

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

  /** The entity an event writes and the state it stores; throws ProjectionUnkeyed. */
  function keyed(event: InboxEvent, index: number): Keyed {
    unkeyedCheck(event);
    return {
      index,
      event,
      entityType: event.entityType ?? settings.entityType,
      entityId: event.entityId!,
      version: event.entityVersion!,
      state: JSON.stringify(evaluatePointer(event.payload, settings.state) ?? null),
    };
  }

  function unkeyedCheck(event: InboxEvent): void {
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
  }

  /** LOCK_ENTITIES: one advisory lock per entity, in hash order (held ones are taken again at no cost). */
  async function lockEntities(
    tx: BatchContext['tx'],
    endpoint: string,
    items: readonly Keyed[],
  ): Promise<void> {
    if (items.length === 0) return;
    await tx.query(LOCK_ENTITIES, [
      endpoint,
      ENTITY_LOCK_CLASS,
      items.map((k) => k.entityType),
      items.map((k) => k.entityId),
    ]);
  }

  return {
    name: 'project',
    async lockBatch(tx, events) {
      const items: Keyed[] = [];
      for (const [index, event] of events.entries()) {
        try {
          items.push(keyed(event, index));
        } catch {
          // An unkeyed event writes nothing: nothing to lock for it.
        }
      }
      await lockEntities(tx, events[0]?.endpoint ?? '', items);
    },
    /**
     * Rounds: the n-th holds each entity's n-th event in the batch's order, so each entity sees
     * its events' statements in the per-event order and entities never affect each other.
     * Events that write nothing and fail (unkeyed; `createOn` and no state yet) fail alone.
     */
    async applyBatch({ tx }: BatchContext, events: readonly InboxEvent[]): Promise<BatchEventResult[]> {
      const results: BatchEventResult[] = new Array(events.length);
      const items: Keyed[] = [];
      for (const [index, event] of events.entries()) {
        try {
          items.push(keyed(event, index));
        } catch (error) {
          results[index] = { error };
        }
      }
      // The batch's entities are locked already (lockBatch, called first by the worker).
      const endpoint = events[0]?.endpoint ?? '';
      for (const round of roundsByKey(items, (k) => entityKey(k.entityType, k.entityId))) {
        const creating = createOn ? round.filter((k) => createOn.has(k.event.eventType)) : round;
        const updating = createOn ? round.filter((k) => !createOn.has(k.event.eventType)) : [];
        if (creating.length > 0) {
          const written = await entitiesOf(tx, UPSERT_ENTITY_STATES, roundParams(endpoint, creating));
          for (const k of creating)
            results[k.index] = written.has(entityKey(k.entityType, k.entityId)) ? 'processed' : 'stale';
        }
        if (updating.length === 0) continue;
        const updated = await entitiesOf(tx, UPDATE_ENTITY_STATES, roundParams(endpoint, updating));
        const missed = updating.filter((k) => !updated.has(entityKey(k.entityType, k.entityId)));
        const existing =
          missed.length === 0
            ? new Set<string>()
            : await entitiesOf(tx, ENTITIES_EXISTING, [
                endpoint,
                missed.map((k) => k.entityType),
                missed.map((k) => k.entityId),
              ]);
        for (const k of updating) {
          const key = entityKey(k.entityType, k.entityId);
          if (updated.has(key)) results[k.index] = 'processed';
          else if (existing.has(key)) results[k.index] = 'stale';
          else
            results[k.index] = {
              error: new EntityNotYetKnown(
                `${k.entityType} ${k.entityId} has no state yet and ${k.event.eventType} may not create it`,
              ),
            };
        }
      }
      return results;
    },
  };
}
