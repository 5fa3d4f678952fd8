import { createHash } from 'node:crypto';
import { ApiProblem } from './problems.ts';

/**
 * An entity tag for the state an action depends on (an event's status and attempts, a delivery's,
 * a held delivery's, a pause): equal exactly when that state is. Strong: `"<22 base64url>"`.
 */
export function etagOf(kind: string, state: unknown): string {
  const digest = createHash('sha256')
    .update(`${kind}\0${JSON.stringify(state)}`)
    .digest('base64url');
  return `"${digest.slice(0, 22)}"`;
}

/** The If-Match header's tags (`*` matches anything that exists). */
function tagsOf(header: string): string[] {
  return header
    .split(',')
    .map((tag) => tag.trim())
    .filter((tag) => tag !== '');
}

/** Refuses (412) an action whose If-Match names none of the thing's state now. */
export function checkIfMatch(ifMatch: string | undefined, current: string, what: string): void {
  if (ifMatch === undefined) return;
  const tags = tagsOf(ifMatch);
  if (tags.includes('*') || tags.includes(current)) return;
  throw new ApiProblem(
    'precondition_failed',
    `${what} has changed since it was read (If-Match ${ifMatch}, now ${current}): read it again and decide again.`,
    { ETag: current },
  );
}
