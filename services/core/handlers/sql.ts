import { sqlOptionsSchema } from '../config/handlers-schema.ts';
import { REFERENCE } from '../config/interpolate.ts';
import { HookgateError } from '../errors.ts';
import { isSettled, SETTLED_STATUSES, sqlList } from '../inbox/status.ts';
import { parseHandlerOptions } from './handler-options.ts';
import type { HandlerDeps } from './index.ts';
import type { ApplyOutcome, Handler, InboxEvent } from './types.ts';

const TRANSACTION_CONTROL =
  /^\s*(begin|start|commit|end|rollback|abort|savepoint|release|prepare|set\s+transaction)\b/i;

function invalid(endpoint: string, problem: string): HookgateError {
  return new HookgateError('handler_spec_invalid', `${endpoint}.handler (sql:): ${problem}`);
}

/** String literals, quoted identifiers and comments, blanked so only code is searched. */
function codeOnly(text: string): string {
  return text
    .replace(/'(?:[^']|'')*'/g, "''")
    .replace(/"(?:[^"]|"")*"/g, '""')
    .replace(/--[^\n]*/g, '')
    .replace(/\/\*[\s\S]*?\*\//g, '');
}

export interface BoundStatement {
  readonly text: string;
  /** Values of `$2`, `$3`, …: the environment variables the statement referenced. */
  readonly parameters: readonly string[];
}

/**
 * Turns each `${NAME}` (or `${NAME:-fallback}`) of the statement into a bound text parameter
 * (`$2`, `$3`, …) holding the variable's value, so a value can never change the SQL. The
 * config loader leaves `sql:` handlers uninterpolated for this. `$${` is a literal `${`.
 */
export function bindEnvReferences(
  statement: string,
  endpoint: string,
  env: Readonly<Record<string, string | undefined>>,
): BoundStatement {
  const references = (text: string) => [...text.matchAll(REFERENCE)].filter((m) => m[1] === '').length;
  if (references(statement) !== references(codeOnly(statement))) {
    throw invalid(
      endpoint,
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the message shows the config syntax
      '${...} inside quotes or a comment cannot be bound; write it as a value, e.g. WHERE tenant = ${TENANT}',
    );
  }
  const parameters: string[] = [];
  const slots = new Map<string, number>();
  const missing: string[] = [];
  const text = statement.replace(REFERENCE, (whole, escaped: string, name: string, fallback?: string) => {
    if (escaped) return whole.slice(1);
    const value = Object.hasOwn(env, name) ? env[name] : undefined;
    const resolved = typeof value === 'string' && value !== '' ? value : fallback;
    if (resolved === undefined) {
      missing.push(name);
      return 'NULL';
    }
    const key = `${name}\u0000${resolved}`;
    let slot = slots.get(key);
    if (slot === undefined) {
      parameters.push(resolved);
      slot = parameters.length + 1;
      slots.set(key, slot);
    }
    return `$${slot}`;
  });
  if (missing.length > 0) {
    throw invalid(endpoint, `environment variable ${[...new Set(missing)].join(', ')} is not set`);
  }
  return { text, parameters };
}

/** Checks the statement text once, at start, so a typo fails the boot and not every event. */
export function validateSqlStatement(statement: string, endpoint: string, bound = 0): string {
  const text = statement.trim();
  if (text === '')
    throw invalid(endpoint, 'the statement is empty; write e.g. sql:SELECT myapp.apply_event($1::jsonb)');
  if (TRANSACTION_CONTROL.test(text)) {
    throw invalid(
      endpoint,
      "transaction control is not allowed; the statement runs inside hookgate's transaction",
    );
  }
  // Strip string literals, quoted identifiers and comments before looking for parameters.
  const code = codeOnly(text);
  const parameters = new Set([...code.matchAll(/\$(\d+)/g)].map((match) => match[1]));
  if (!parameters.has('1')) {
    throw invalid(
      endpoint,
      'the statement must use $1 (the event as JSON), e.g. SELECT myapp.apply_event($1::jsonb)',
    );
  }
  // $2… are the statement's own ${ENV} references, bound by bindEnvReferences.
  const others = [...parameters].filter((p) => p !== '1' && !(Number(p) >= 2 && Number(p) <= bound + 1));
  if (others.length > 0)
    throw invalid(endpoint, `only $1 is bound; the statement also uses $${others.join(', $')}`);
  if (/;\s*\S/.test(code)) throw invalid(endpoint, 'only one statement is allowed');
  return text.replace(/;\s*$/, '');
}

/** `$1` of a sql: handler: the event as one JSON document. */
export function eventJson(event: InboxEvent): string {
  return JSON.stringify({
    endpoint: event.endpoint,
    event_id: event.eventId,
    provider: event.provider,
    type: event.eventType,
    entity:
      event.entityType === null && event.entityId === null
        ? null
        : { type: event.entityType, id: event.entityId },
    // Decimal string: versions may exceed JSON's safe integers. ($1->>'version')::bigint reads it.
    version: event.entityVersion,
    received_at: event.receivedAt.toISOString(),
    attempts: event.attempts,
    payload: event.payload,
  });
}

/**
 * Runs a user's statement with the event as `$1` inside the apply transaction (its savepoint).
 * The first column of the first row, if any, is the outcome: 'processed', 'ignored', 'stale',
 * or null / no row / void for processed. A raised exception retries like any failure.
 */
export function createSqlHandler(
  statement: string,
  options: unknown,
  deps: HandlerDeps,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Handler {
  parseHandlerOptions(sqlOptionsSchema, options, deps.endpoint);
  // Written by the user before binding, so `$2` in their text is refused, not confused with ours.
  validateSqlStatement(statement.replace(REFERENCE, 'NULL'), deps.endpoint);
  const bound = bindEnvReferences(statement, deps.endpoint, env);
  const text = validateSqlStatement(bound.text, deps.endpoint, bound.parameters.length);
  return {
    name: 'sql',
    async apply({ tx }, event): Promise<ApplyOutcome | undefined> {
      const values = [eventJson(event), ...bound.parameters];
      const result = await tx.query({ text, values, rowMode: 'array' });
      const value: unknown = (result.rows[0] as unknown[] | undefined)?.[0];
      if (value === undefined || value === null || value === '') return undefined;
      if (isSettled(value)) return value;
      throw new HookgateError(
        'handler_result_invalid',
        `sql handler of ${deps.endpoint} returned ${JSON.stringify(value)}; expected ${sqlList(SETTLED_STATUSES)} or null`,
      );
    },
  };
}
