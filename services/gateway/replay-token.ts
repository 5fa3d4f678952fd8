import { createHash, timingSafeEqual } from 'node:crypto';

export const REPLAY_TOKEN_HEADER = 'x-hookgate-replay-token';

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/**
 * Whether `token` equals one of the endpoint's replay secrets. Both sides are hashed first so
 * the comparison is constant-time whatever the lengths, and every secret is compared (no early
 * exit that would tell which one, or whether the first, matched).
 */
export function checkReplayToken(token: string, secrets: readonly string[]): boolean {
  const given = digest(token);
  let matched = false;
  for (const secret of secrets) matched = timingSafeEqual(given, digest(secret)) || matched;
  return matched;
}
