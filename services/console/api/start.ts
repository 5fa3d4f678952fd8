import type express from 'express';
import { pruneKeys } from '../../core/api/idempotency.ts';
import { forgetOtherTokens } from '../../core/api/token-use.ts';
import type { ConsoleContext } from '../context.ts';
import type { ConsoleSettings } from '../settings.ts';
import { RateLimiter } from './rate-limit.ts';
import { createApiRouter } from './router.ts';
import { TokenUseRecorder } from './token-use.ts';

/** How often the console deletes expired Idempotency-Keys. */
const PRUNE_EVERY_MS = 3_600_000;

export interface RunningApi {
  readonly router: express.Router;
  /** Deletes the expired Idempotency-Keys now (the hourly upkeep's one pass); returns how many. */
  pruneOnce(): Promise<number>;
  stop(): void;
}

/**
 * The API's part of a console process: its router, and its upkeep: the last-use rows of tokens the
 * configuration no longer names are forgotten at start, and Idempotency-Keys past
 * console.api.idempotencyTtl are deleted at start and every hour (any replica may; they delete the
 * same rows). The start's two statements are awaited, so none is still running when the process
 * says it is serving (an interrupt then finds nothing in flight).
 */
export async function startApi(
  context: ConsoleContext,
  settings: ConsoleSettings,
  now: () => number = Date.now,
): Promise<RunningApi> {
  const api = context.config.console.api;
  const router = createApiRouter({
    ...context,
    settings,
    limiter: new RateLimiter(api.rateLimit),
    tokenUse: new TokenUseRecorder(context.pool, context.logger),
    now,
  });
  const pruneOnce = () => pruneKeys(context.pool, new Date(now() - api.idempotencyTtl));
  const upkeep = () =>
    pruneOnce().then(
      () => undefined,
      (error: unknown) =>
        context.logger.warn({ err: error }, 'api: could not delete expired Idempotency-Keys'),
    );
  await forgetOtherTokens(
    context.pool,
    settings.tokens.map((token) => token.name),
  ).catch((error: unknown) =>
    context.logger.warn({ err: error }, 'api: could not forget the last use of removed tokens'),
  );
  await upkeep();
  const timer = setInterval(upkeep, PRUNE_EVERY_MS);
  timer.unref();
  return { router, pruneOnce, stop: () => clearInterval(timer) };
}
