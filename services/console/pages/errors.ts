import { formatDuration } from '../../core/config/duration.ts';
import type { ConsoleContext } from '../context.ts';

/**
 * A failed statement as the page says it: the search was stopped at console.queryTimeout, or
 * the input is something PostgreSQL cannot compare (a \u0000 in a JSON search), or the database
 * is unreachable. Nothing of the statement or its values is shown.
 */
export function queryFailure(error: unknown, context: ConsoleContext): { status: number; message: string } {
  const code = (error as { code?: unknown }).code;
  if (code === '57014') {
    return {
      status: 503,
      message: `The search was stopped after ${formatDuration(context.queryTimeoutMs, '1s')} (console.queryTimeout): narrow it with an endpoint, a status or a time range.`,
    };
  }
  if (typeof code === 'string' && code.startsWith('22')) {
    return {
      status: 400,
      message: 'PostgreSQL cannot search for that value (for example a \\u0000 inside the JSON).',
    };
  }
  context.logger.warn({ err: error }, 'console: a page query failed');
  return { status: 503, message: 'The database did not answer; try again shortly.' };
}
