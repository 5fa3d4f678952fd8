import type { TemplateField } from '../core/config/bus-schema.ts';

// Where on a broker one delivery goes: a destination's subject (NATS) or routing key (RabbitMQ)
// template filled in with the delivery's own values. The values are a provider's text (an event
// type, an entity id), and a subject's or topic routing key's dots and wildcards mean something,
// so each value is reduced to `A-Z a-z 0-9 _ -`: every other character becomes `_`, an empty value
// `_`. `{type}` alone keeps its dots, as levels (`invoice.paid` stays two tokens), each level
// reduced the same way. The address only routes: the event's exact id, type and entity travel as
// headers.

export type TemplateValues = Readonly<Record<TemplateField, string | null>>;

const token = (value: string): string => value.replace(/[^A-Za-z0-9_-]/g, '_') || '_';

/** A value as it appears in an address. */
function addressPart(field: TemplateField, value: string | null): string {
  if (value === null) return '_';
  if (field === 'type') return value.split('.').map(token).join('.');
  return token(value);
}

export function fillTemplate(template: string, values: TemplateValues): string {
  return template.replace(/\{([a-z_]+)\}/g, (_, field: TemplateField) => addressPart(field, values[field]));
}

/** The entity of a delivery row's `entity_key` (`["customer","cus_1"]`), or nulls. */
export function entityOf(entityKey: string | null): { type: string | null; id: string | null } {
  if (entityKey === null) return { type: null, id: null };
  try {
    const parsed: unknown = JSON.parse(entityKey);
    if (Array.isArray(parsed) && parsed.length === 2) {
      return { type: String(parsed[0]), id: String(parsed[1]) };
    }
  } catch {
    // Not the apply engine's shape: no entity to route on.
  }
  return { type: null, id: null };
}
