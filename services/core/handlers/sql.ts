import type { HandlerDeps } from './index.ts';
import type { Handler } from './types.ts';

export function createSqlHandler(_statement: string, _options: unknown, _deps: HandlerDeps): Handler {
  throw new Error('the sql handler is not implemented yet');
}
