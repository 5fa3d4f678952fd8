import { z } from 'zod';
import { HookgateError } from '../errors.ts';
import { parseHandlerOptions } from './handler-options.ts';
import type { HandlerDeps } from './index.ts';
import type { ApplyOutcome, Handler, InboxEvent } from './types.ts';

/** The sql handler takes no options: the statement is the whole configuration. */
const sqlOptionsSchema = z.strictObject({});

const TRANSACTION_CONTROL =
  /^\s*(begin|start|commit|end|rollback|abort|savepoint|release|prepare|set\s+transaction)\b/i;
const OUTCOMES = new Set<string>(['processed', 'ignored', 'stale']);

function invalid(endpoint: string, problem: string): HookgateError {
  return new HookgateError('handler_spec_invalid', `${endpoint}.handler (sql:): ${problem}`);
}

/** Checks the statement text once, at start, so a typo fails the boot and not every event. */
export function validateSqlStatement(statement: string, endpoint: string): string {
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
  const code = text
    .replace(/'(?:[^']|'')*'/g, "''")
    .replace(/"(?:[^"]|"")*"/g, '""')
    .replace(/--[^\n]*/g, '')
    .replace(/\/\*[\s\S]*?\*\//g, '');
  const parameters = new Set([...code.matchAll(/\$(\d+)/g)].map((match) => match[1]));
  if (!parameters.has('1')) {
    throw invalid(
      endpoint,
      'the statement must use $1 (the event as JSON), e.g. SELECT myapp.apply_event($1::jsonb)',
    );
  }
  const others = [...parameters].filter((p) => p !== '1');
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
export function createSqlHandler(statement: string, options: unknown, deps: HandlerDeps): Handler {
  parseHandlerOptions(sqlOptionsSchema, options, deps.endpoint);
  const text = validateSqlStatement(statement, deps.endpoint);
  return {
    name: 'sql',
    async apply({ tx }, event): Promise<ApplyOutcome | undefined> {
      const result = await tx.query({ text, values: [eventJson(event)], rowMode: 'array' });
      const value: unknown = (result.rows[0] as unknown[] | undefined)?.[0];
      if (value === undefined || value === null || value === '') return undefined;
      if (typeof value === 'string' && OUTCOMES.has(value)) return value as ApplyOutcome;
      throw new HookgateError(
        'handler_result_invalid',
        `sql handler of ${deps.endpoint} returned ${JSON.stringify(value)}; expected 'processed', 'ignored', 'stale' or null`,
      );
    },
  };
}
