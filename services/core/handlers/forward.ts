import type { HandlerDeps } from './index.ts';
import type { Handler } from './types.ts';

export function createForwardHandler(_options: unknown, _deps: HandlerDeps): Handler {
  throw new Error('the forward handler is not implemented yet');
}
