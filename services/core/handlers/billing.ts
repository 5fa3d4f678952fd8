import type { HandlerDeps } from './index.ts';
import type { Handler } from './types.ts';

export function createBillingHandler(_options: unknown, _deps: HandlerDeps): Handler {
  throw new Error('the billing handler is not implemented yet');
}
