// What an answer means for a load run, shared by the k6 scripts and tested under Node.

export type AnswerKind = 'acked' | 'backpressure' | 'failed';

/** `503 overloaded`: the gateway shedding load as documented (docs/gateway.md, "Load shedding"). */
export function isBackpressure(status: number, body: string | null | undefined): boolean {
  if (status !== 503 || !body) return false;
  try {
    const parsed: unknown = JSON.parse(body);
    return (
      typeof parsed === 'object' && parsed !== null && (parsed as { error?: unknown }).error === 'overloaded'
    );
  } catch {
    return false;
  }
}

/**
 * 2xx is acknowledged. `503 overloaded` is back-pressure where the scenario expects it (a spike
 * past capacity), a failure elsewhere; every other answer (another 503 included, such as
 * `database_unavailable`) is a failure.
 */
export function classifyAnswer(
  status: number,
  body: string | null | undefined,
  backpressureExpected: boolean,
): AnswerKind {
  if (status >= 200 && status < 300) return 'acked';
  if (backpressureExpected && isBackpressure(status, body)) return 'backpressure';
  return 'failed';
}
