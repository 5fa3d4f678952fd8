import { userInfo } from 'node:os';

/**
 * Who an operator action is recorded as: `--actor` when given, else HOOKGATE_ACTOR, else the OS
 * user running the command (in a Kubernetes Job that is the image's user, hence the first two).
 */
export function resolveActor(given: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  const named = given?.trim() || env.HOOKGATE_ACTOR?.trim();
  if (named) return named.slice(0, 200);
  try {
    return userInfo().username || 'unknown';
  } catch {
    // No passwd entry for the uid (a container run with an arbitrary uid).
    return `uid:${process.getuid?.() ?? 'unknown'}`;
  }
}

/** The actor of an action taken in the console: the signed-in user, marked as such. */
export function consoleActor(viewerName: string): string {
  return `console:${viewerName}`.slice(0, 200);
}

/** The actor of an action taken through the management API: the access token's name, marked as such. */
export function apiActor(tokenName: string): string {
  return `api:${tokenName}`.slice(0, 200);
}
