import type { HandlerDeps } from './index.ts';
import type { Handler } from './types.ts';

export function createProjectHandler(_options: unknown, _deps: HandlerDeps): Handler {
  throw new Error('the project handler is not implemented yet');
}
