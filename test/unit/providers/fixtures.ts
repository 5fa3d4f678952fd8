import type { Provider, VerifyRequest } from '../../../services/core/providers/types.ts';

/** A fixed clock: 2023-11-14T22:13:20Z. No test reads the real clock. */
export const NOW_S = 1_700_000_000;
export const NOW_MS = NOW_S * 1000;
export const TOLERANCE_S = 300;

export function request(
  rawBody: string | Buffer,
  headers: Record<string, string>,
  secrets: readonly string[],
  nowMs: number = NOW_MS,
): VerifyRequest {
  const lower: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) lower[name.toLowerCase()] = value;
  return {
    rawBody: typeof rawBody === 'string' ? Buffer.from(rawBody) : rawBody,
    headers: lower,
    secrets,
    nowMs,
    toleranceSeconds: TOLERANCE_S,
  };
}

/** The verdict's code, or 'ok', so assertions read as one line. */
export function verdictOf(provider: Provider, req: VerifyRequest): string {
  const verdict = provider.verify(req);
  return verdict.ok ? 'ok' : verdict.code;
}

/** Same JSON, other whitespace: a signature over the raw bytes must not survive this. */
export function reserialised(body: string): string {
  return JSON.stringify(JSON.parse(body), null, 2);
}

export function tampered(body: string): string {
  return body.replace('"', '"x');
}

/** Identifies after a successful verification, as the gateway does. */
export function identify(provider: Provider, req: VerifyRequest) {
  const verdict = provider.verify(req);
  if (!verdict.ok) throw new Error(`verification failed: ${verdict.code} ${verdict.message}`);
  return provider.identify({ headers: req.headers, body: JSON.parse(req.rawBody.toString('utf8')) });
}
