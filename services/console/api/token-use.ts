import type pg from 'pg';
import { recordTokenUse, TOKEN_USE_RESOLUTION_MS } from '../../core/api/token-use.ts';
import type { Logger } from '../../core/logging.ts';

/**
 * Records each token's last use (hookgate.api_token_use) at most once a minute per token from this
 * process, off the request's path: a failed write is logged and forgotten (the next minute's
 * request tries again); it never fails the request.
 */
export class TokenUseRecorder {
  private readonly written = new Map<string, number>();
  private readonly pool: pg.Pool;
  private readonly logger: Logger;

  constructor(pool: pg.Pool, logger: Logger) {
    this.pool = pool;
    this.logger = logger;
  }

  touch(token: string, source: string | null, now: number): void {
    const last = this.written.get(token);
    if (last !== undefined && now - last < TOKEN_USE_RESOLUTION_MS) return;
    this.written.set(token, now);
    recordTokenUse(this.pool, { token, at: new Date(now), source }).catch((error: unknown) => {
      this.written.delete(token);
      this.logger.warn({ err: error, token }, "api: could not record a token's last use");
    });
  }
}
