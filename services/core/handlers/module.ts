import type { HandlerDeps } from './index.ts';
import type { Handler } from './types.ts';

export async function createModuleHandler(
  _path: string,
  _options: unknown,
  _deps: HandlerDeps,
): Promise<Handler> {
  throw new Error('the module handler is not implemented yet');
}
