import { z } from 'zod';
import { parseDuration } from '../../core/config/duration.ts';
import { ApiProblem } from './problems.ts';

// The API's inputs, validated with zod at the edge: the path's names and ids, the query's filters,
// the cursors and the bodies. A refusal is one sentence naming the parameter (usage_invalid, 400).

export const ENDPOINT_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
export const endpointName = z.string().regex(ENDPOINT_NAME, 'is not an endpoint name');
export const destinationName = z.string().min(1).max(63);
export const numericId = z.string().regex(/^[0-9]{1,18}$/, 'is not an id (digits)');

/** As the document's PointInTime: a whole duration ago, or an RFC 3339 time with its offset. */
const POINT_IN_TIME =
  /^([0-9]+(ms|s|m|h|d)|[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,6})?)?(Z|[+-][0-9]{2}:[0-9]{2}))$/;

export function pointInTime(now: () => number) {
  return z.string().transform((text, ctx) => {
    const ago = POINT_IN_TIME.test(text) ? parseDuration(text) : undefined;
    if (ago !== undefined) return new Date(now() - ago);
    const at = POINT_IN_TIME.test(text) ? new Date(text) : new Date(Number.NaN);
    if (Number.isNaN(at.getTime())) {
      ctx.addIssue({
        code: 'custom',
        message: `"${text.slice(0, 60)}" is neither a duration ago (90s, 15m, 2h, 7d) nor an RFC 3339 time (2026-11-30T14:00:00Z)`,
      });
      return z.NEVER;
    }
    return at;
  });
}

export const limit = z
  .string()
  .regex(/^[0-9]{1,3}$/, 'must be a whole number from 1 to 500')
  .transform(Number)
  .pipe(z.number().int().min(1, 'must be at least 1').max(500, 'must be at most 500'))
  .default(50);

export const cursor = z.string().min(1).max(2_000);

export const dryRun = z
  .enum(['true', 'false'], { error: 'must be true or false' })
  .transform((value) => value === 'true')
  .default(false);

function sentence(where: string, issue: z.core.$ZodIssue): string {
  const name = issue.path.map(String).join('.');
  const subject = name ? `${where} ${name}` : where;
  switch (issue.code) {
    case 'unrecognized_keys':
      return `${subject}: unknown ${issue.keys.length > 1 ? 'fields' : 'field'} ${issue.keys.join(', ')}.`;
    case 'invalid_type':
      return /received undefined/.test(issue.message)
        ? `${subject} is required.`
        : `${subject} must be ${issue.expected === 'array' ? 'a list' : `a ${issue.expected}`}.`;
    case 'too_big':
      return `${subject} must be at most ${issue.maximum}${issue.origin === 'string' ? ' characters' : issue.origin === 'array' ? ' items' : ''}.`;
    case 'too_small':
      return issue.origin === 'string'
        ? `${subject} must not be empty.`
        : `${subject} must be at least ${issue.minimum}${issue.origin === 'array' ? ' item(s)' : ''}.`;
    case 'invalid_value':
      return `${subject} must be one of ${issue.values.map(String).join(', ')}.`;
    default:
      return `${subject} ${issue.message.replace(/\.$/, '')}.`;
  }
}

/** Parses with `schema`, or refuses with the first problem as a sentence about `where`. */
export function parseInput<Schema extends z.ZodType>(
  schema: Schema,
  value: unknown,
  where: 'query parameter' | 'body field' | 'path parameter' | 'the body',
): z.output<Schema> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  throw new ApiProblem('usage_invalid', sentence(where, issue));
}

/** The query string as a plain object of strings; a repeated parameter is refused. */
export function queryOf(query: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries((query ?? {}) as Record<string, unknown>)) {
    if (typeof value !== 'string')
      throw new ApiProblem('usage_invalid', `query parameter ${name} is given more than once.`);
    out[name] = value;
  }
  return out;
}

/** An opaque cursor: base64url JSON of what the keyset needs, checked again when it comes back. */
export function encodeCursor(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

export function decodeCursor<Schema extends z.ZodType>(schema: Schema, text: string): z.output<Schema> {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    value = undefined;
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success)
    throw new ApiProblem(
      'usage_invalid',
      'query parameter cursor is not one this list gave: pass a next_cursor back as it came.',
    );
  return parsed.data;
}

/** A Date as the API writes times: RFC 3339 in UTC. */
export function iso(date: Date): string;
export function iso(date: Date | null | undefined): string | null;
export function iso(date: Date | null | undefined): string | null {
  return date ? date.toISOString() : null;
}
