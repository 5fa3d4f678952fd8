import type { DestinationFilter, FilterCondition } from '../config/destinations-schema.ts';
import { evaluatePointer } from '../providers/json-pointer.ts';

// A destination's filter, decided on an event's type and payload: declarative only (globs and
// JSON-pointer conditions), never code. Compiled once per destination when the worker starts.

/** What a filter looks at. */
export interface FilterInput {
  readonly eventType: string;
  readonly payload: unknown;
}

/** Why a filter said yes or no, for `events show` and logs. */
export type FilterDecision =
  | { readonly matches: true }
  | { readonly matches: false; readonly reason: string };

export type CompiledFilter = (event: FilterInput) => FilterDecision;

/** `invoice.*` → /^invoice\..*$/: `*` is any run of characters (dots included), all else literal. */
export function globToRegExp(glob: string): RegExp {
  const body = glob
    .split('*')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${body}$`, 's');
}

/** Scalars compare by type and value: 1 is not "1", true is not "true". */
function sameScalar(a: unknown, b: unknown): boolean {
  return typeof a === typeof b && a === b;
}

function holds(condition: FilterCondition, payload: unknown): boolean {
  const value = evaluatePointer(payload, condition.pointer);
  if (condition.exists !== undefined) return (value !== undefined) === condition.exists;
  if (value === undefined) return false;
  if (condition.in !== undefined) return condition.in.some((option) => sameScalar(value, option));
  return sameScalar(value, condition.equals);
}

function describe(condition: FilterCondition): string {
  if (condition.exists !== undefined)
    return `${condition.pointer} ${condition.exists ? 'exists' : 'is absent'}`;
  if (condition.in !== undefined) return `${condition.pointer} in ${JSON.stringify(condition.in)}`;
  return `${condition.pointer} equals ${JSON.stringify(condition.equals)}`;
}

export function compileFilter(filter: DestinationFilter | undefined): CompiledFilter {
  const types = filter?.types?.map(globToRegExp);
  const where = filter?.where ?? [];
  return (event) => {
    if (types && !types.some((type) => type.test(event.eventType))) {
      return {
        matches: false,
        reason: `type ${event.eventType} matches none of ${filter?.types?.join(', ')}`,
      };
    }
    for (const condition of where) {
      if (!holds(condition, event.payload)) return { matches: false, reason: `not: ${describe(condition)}` };
    }
    return { matches: true };
  };
}
