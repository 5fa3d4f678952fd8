import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { HookgateError } from '../errors.ts';
import { isSettled, SETTLED_STATUSES, sqlList } from '../inbox/status.ts';
import type { HandlerDeps } from './index.ts';
import type { ApplyOutcome, Handler } from './types.ts';

function invalid(deps: HandlerDeps, spec: string, problem: string, cause?: unknown): HookgateError {
  return new HookgateError(
    'handler_module_invalid',
    `${deps.endpoint}.handler (module:${spec}): ${problem}`,
    {
      cause,
    },
  );
}

const isHandlerShape = (value: unknown): value is { apply: NonNullable<Handler['apply']>; name?: unknown } =>
  typeof value === 'object' && value !== null && typeof (value as { apply?: unknown }).apply === 'function';

/**
 * Loads a user's JS/TS module (path relative to the config file's directory). It exports, as
 * `handler` or as default, either an object with `apply(ctx, event)` or a factory
 * `(options, { endpoint, logger, configDir })` returning one (or a promise of one). The shape is
 * checked here, at start; a module that does not fit stops the boot with a clear error.
 */
export async function createModuleHandler(
  path: string,
  options: unknown,
  deps: HandlerDeps,
): Promise<Handler> {
  const spec = path.trim();
  if (spec === '')
    throw invalid(deps, spec, 'the module path is empty; write e.g. module:./handlers/mine.ts');
  const file = isAbsolute(spec) ? spec : resolve(deps.configDir, spec);
  if (!existsSync(file))
    throw invalid(deps, spec, `no file at ${file} (paths are relative to ${deps.configDir})`);
  let loaded: Record<string, unknown>;
  try {
    loaded = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
    throw invalid(deps, spec, `importing ${file} failed: ${(error as Error).message}`, error);
  }
  const exported = loaded.handler ?? loaded.default;
  if (exported === undefined) {
    throw invalid(deps, spec, 'the module exports neither `handler` nor a default export');
  }
  let candidate: unknown = exported;
  if (typeof exported === 'function' && !isHandlerShape(exported)) {
    try {
      candidate = await (exported as (options: unknown, deps: HandlerDeps) => unknown)(options, deps);
    } catch (error) {
      throw invalid(deps, spec, `its handler factory threw: ${(error as Error).message}`, error);
    }
  }
  if (!isHandlerShape(candidate)) {
    throw invalid(
      deps,
      spec,
      'the export is not a handler: expected an object with an apply(ctx, event) function, or a factory returning one',
    );
  }
  const user = candidate;
  const name = typeof user.name === 'string' && user.name ? user.name : `module:${spec}`;
  return {
    name,
    async apply(context, event): Promise<ApplyOutcome | undefined> {
      const outcome: unknown = await user.apply(context, event);
      if (outcome === undefined || outcome === null) return undefined;
      if (isSettled(outcome)) return outcome;
      throw new HookgateError(
        'handler_result_invalid',
        `module:${spec} returned ${JSON.stringify(outcome)}; expected ${sqlList(SETTLED_STATUSES)} or nothing`,
      );
    },
  };
}
