/** SQLSTATEs that say "not now" rather than "never": the server is starting, stopping or full. */
const TRANSIENT_STATES = new Set(['57P01', '57P02', '57P03', '53300']);

/** Network errors that say the server is not reachable yet (DNS included: CoreDNS may lag). */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);

/**
 * Whether an error from a first query means the database cannot be reached yet (down,
 * restarting, not resolvable yet, refusing connections while it starts), as opposed to a
 * refusal that waiting will not change (a wrong password, a missing database).
 */
export function isUnreachable(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') {
      if (NETWORK_CODES.has(code)) return true;
      if (code.startsWith('08') || TRANSIENT_STATES.has(code)) return true;
      return false;
    }
    if (current instanceof AggregateError && current.errors.length > 0) current = current.errors[0];
    else current = (current as { cause?: unknown }).cause;
  }
  // node-postgres reports a connection dropped during start-up without a code.
  return error instanceof Error && /Connection terminated|timeout expired/i.test(error.message);
}
