import type { HandlerDeps } from './index.ts';
import type { Handler } from './types.ts';

export function createRecordHandler(_options: unknown, _deps: HandlerDeps): Handler {
  throw new Error('the record handler is not implemented yet');
}
