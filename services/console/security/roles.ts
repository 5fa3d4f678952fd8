import type { NextFunction, Request, Response } from 'express';
import { type Viewer, viewerOf } from './viewer.ts';

// Roles (console.users[].role, console.tokens[].role, console.proxyAuth.role, the users file's
// third field): a viewer reads every page and every API read; only an operator takes actions.
// The pages offer no action form to a viewer, and the action routes refuse one whatever it sends.

export function canAct(viewer: Viewer): boolean {
  return viewer.role === 'operator';
}

/** The console's action routes (/actions/…): 403 for a viewer, before the form is even read. */
export function requireOperator(req: Request, res: Response, next: NextFunction): void {
  const viewer = viewerOf(req);
  if (canAct(viewer)) {
    next();
    return;
  }
  res
    .status(403)
    .type('text/plain')
    .send(`Refused: ${viewer.name} is a viewer; only an operator can take actions.\n`);
}
