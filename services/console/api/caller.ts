import type { NextFunction, Request, Response } from 'express';
import type { ConsoleRole } from '../../core/config/console-schema.ts';
import { tokenMatches } from '../security/tokens.ts';
import type { ConsoleSettings } from '../settings.ts';
import { ApiProblem } from './problems.ts';

/** Who sends an API request: an access token (console.tokens), or nobody in the loopback demo. */
export interface Caller {
  readonly name: string;
  readonly role: ConsoleRole;
  readonly via: 'token' | 'demo';
}

const UNAUTHORIZED = { 'WWW-Authenticate': 'Bearer realm="hookgate"' };

/**
 * The caller a request's `Authorization: Bearer` names. The API takes tokens only (no session
 * cookies, so no form of another site can act through a signed-in browser); the embedded demo on
 * loopback, which needs no sign-in anywhere, answers a request without one as `demo`, an operator.
 */
export function identifyCaller(settings: ConsoleSettings, req: Request): Caller {
  const authorization = req.headers.authorization;
  if (authorization === undefined && settings.demo) return { name: 'demo', role: 'operator', via: 'demo' };
  const match = /^Bearer +(\S+) *$/i.exec(authorization ?? '');
  if (!match) {
    throw new ApiProblem(
      'auth_required',
      'Send an access token (console.tokens) as "Authorization: Bearer <token>".',
      UNAUTHORIZED,
    );
  }
  const token = match[1]!;
  // Every configured digest is compared (constant time each), whichever matches.
  let found: ConsoleSettings['tokens'][number] | undefined;
  for (const candidate of settings.tokens) if (tokenMatches(token, candidate.sha256)) found ??= candidate;
  if (!found) throw new ApiProblem('auth_required', 'This console knows no such access token.', UNAUTHORIZED);
  return { name: found.name, role: found.role, via: 'token' };
}

export function callerOf(req: Request): Caller {
  const caller = (req as Request & { apiCaller?: Caller }).apiCaller;
  if (!caller) throw new Error('api route reached without a caller');
  return caller;
}

export function setCaller(req: Request, caller: Caller): void {
  (req as Request & { apiCaller?: Caller }).apiCaller = caller;
}

/** Actions need an operator: a viewer's token is refused before its body is read. */
export function requireOperatorCaller(req: Request, _res: Response, next: NextFunction): void {
  const caller = callerOf(req);
  if (caller.role === 'operator') {
    next();
    return;
  }
  next(
    new ApiProblem(
      'role_forbidden',
      `The token ${caller.name} is a viewer's: it reads everything, and only an operator's token acts.`,
    ),
  );
}
