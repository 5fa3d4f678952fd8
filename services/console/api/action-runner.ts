import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';
import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { z } from 'zod';
import { claimKey, completeKey, releaseKey } from '../../core/api/idempotency.ts';
import { apiActor } from '../../core/audit/actor.ts';
import type { Config } from '../../core/config/schema.ts';
import type { Logger } from '../../core/logging.ts';
import { type Caller, callerOf } from './caller.ts';
import { dryRun, parseInput, queryOf } from './params.ts';
import { ApiProblem, problemOf, sendProblemBody } from './problems.ts';
import type { components } from './schema.ts';

export type ActionResult = components['schemas']['ActionResult'];

/** What an action's function is given. */
export interface ActionCall<Body> {
  readonly pool: pg.Pool;
  readonly boss: PgBoss;
  readonly config: Config;
  readonly endpoints: readonly string[];
  readonly caller: Caller;
  /** `api:<token name>`, as the audit trail records it. */
  readonly actor: string;
  readonly params: Readonly<Record<string, string>>;
  readonly body: Body;
  readonly dryRun: boolean;
  readonly ifMatch: string | undefined;
}

export interface ActionAnswer {
  /** 200 unless said (a queued reconciliation run: 202). */
  readonly status?: number;
  readonly result: ActionResult;
}

export interface ApiAction<Body> {
  /** The body's schema (an absent body is `{}`). */
  readonly body: z.ZodType<Body>;
  run(call: ActionCall<Body>): Promise<ActionAnswer>;
}

export interface ActionContext {
  readonly pool: pg.Pool;
  readonly boss: PgBoss;
  readonly config: Config;
  readonly endpoints: readonly string[];
  readonly logger: Logger;
  readonly queryTimeoutMs: number;
  /** console.api.idempotencyTtl. */
  readonly idempotencyTtlMs: number;
  readonly now: () => number;
}

/** How long a claimed key waits for its action's answer before a retry may act in its place. */
const KEY_LOCK_MS = 5 * 60_000;
const KEY = /^[\x21-\x7e]{1,255}$/;

/** The same request: method, path and query as sent, If-Match, and the body as parsed. */
export function requestDigest(request: {
  readonly method: string;
  readonly url: string;
  readonly ifMatch: string | undefined;
  readonly body: unknown;
}): Buffer {
  return createHash('sha256')
    .update(
      [request.method, request.url, request.ifMatch ?? '', JSON.stringify(request.body ?? {})].join('\n'),
    )
    .digest();
}

const actionQuery = z.strictObject({ dryRun });

/**
 * An action's route: validates the key, the query and the body, claims the Idempotency-Key (a
 * retry gets the first answer back, with `Idempotent-Replayed: true`, and nothing is done twice),
 * runs the action's function, and stores its answer (2xx and 4xx alike: a retry of a refused
 * request is refused the same way) before sending it. An answer the action could not give (5xx)
 * gives the key back, so a retry acts.
 */
export function actionRoute<Body>(context: ActionContext, action: ApiAction<Body>) {
  return async (req: Request, res: Response): Promise<void> => {
    const caller = callerOf(req);
    const key = req.headers['idempotency-key'];
    if (typeof key !== 'string' || key === '') {
      throw new ApiProblem(
        'idempotency_key_missing',
        'Send an Idempotency-Key header (a new UUID per action; the same one when retrying it).',
      );
    }
    if (!KEY.test(key))
      throw new ApiProblem(
        'usage_invalid',
        'The Idempotency-Key must be 1 to 255 visible ASCII characters (a UUID, say).',
      );
    const query = parseInput(actionQuery, queryOf(req.query), 'query parameter');
    const body = parseInput(action.body, req.body ?? {}, 'body field');
    const ifMatch = typeof req.headers['if-match'] === 'string' ? req.headers['if-match'] : undefined;
    const scope = { token: caller.name, key };
    const claim = await claimKey(context.pool, {
      ...scope,
      digest: requestDigest({ method: req.method, url: req.originalUrl, ifMatch, body: req.body }),
      now: new Date(context.now()),
      ttlMs: context.idempotencyTtlMs,
      lockMs: KEY_LOCK_MS,
    });
    if (claim.kind === 'reused')
      throw new ApiProblem(
        'idempotency_key_reused',
        `The Idempotency-Key ${key} was sent with another request (another path, query or body): use a new key for a new action.`,
      );
    if (claim.kind === 'in_progress')
      throw new ApiProblem(
        'idempotency_key_in_progress',
        `The first request with Idempotency-Key ${key} is still acting: retry shortly to get its answer.`,
      );
    if (claim.kind === 'answered') {
      const stored = claim.answer as { readonly headers?: Record<string, string>; readonly body: unknown };
      res.setHeader('Idempotent-Replayed', 'true');
      if (claim.status >= 400)
        sendProblemBody(res, { status: claim.status, ...(stored.body as object) }, stored.headers);
      else res.status(claim.status).json(stored.body);
      return;
    }
    let status: number;
    let answer: unknown;
    let headers: Readonly<Record<string, string>> = {};
    try {
      const done = await action.run({
        pool: context.pool,
        boss: context.boss,
        config: context.config,
        endpoints: context.endpoints,
        caller,
        actor: apiActor(caller.name),
        params: req.params as Record<string, string>,
        body,
        dryRun: query.dryRun,
        ifMatch,
      });
      status = done.status ?? 200;
      answer = done.result;
    } catch (error) {
      const problem = problemOf(error, context, req.originalUrl);
      if (problem.body.status >= 500) {
        await releaseKey(context.pool, scope).catch(() => {});
        sendProblemBody(res, problem.body, problem.headers);
        return;
      }
      status = problem.body.status;
      answer = problem.body;
      headers = problem.headers;
    }
    // The answer as sent, with the headers a refusal carries (a 412's ETag), for the retries.
    await completeKey(context.pool, scope, status, { headers, body: answer });
    context.logger.info(
      {
        api_token: caller.name,
        via: caller.via,
        path: req.path,
        dry_run: query.dryRun,
        status,
        ...(status < 400 ? { count: (answer as ActionResult).count } : {}),
      },
      'api action',
    );
    if (status >= 400) sendProblemBody(res, answer as { status: number }, headers);
    else res.status(status).json(answer);
  };
}

/** The first 1000 ids (the answer's bound); `count` stays complete. */
export function firstIds(ids: readonly string[]): string[] {
  return ids.slice(0, 1000);
}
