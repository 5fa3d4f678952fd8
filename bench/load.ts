import autocannon from 'autocannon';

export interface LoadResult {
  readonly requests: number;
  readonly ok: number;
  readonly non2xx: number;
  readonly errors: number;
  readonly durationSeconds: number;
  readonly okPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

export interface PreparedRequest {
  readonly body: string;
  readonly headers: Record<string, string>;
}

/**
 * Closed-loop load on 127.0.0.1 with a fixed number of connections for a fixed time; every
 * target gets exactly the same generator, request list and settings, so the generator cancels
 * out of each ratio. For a fixed arrival rate use load/driver/ (evenly spaced arrivals):
 * autocannon's rate limit refills each connection's quota on a one-second timer, which sends
 * per-second bursts.
 */
export async function drive(
  url: string,
  requests: readonly PreparedRequest[],
  options: { connections: number; seconds: number },
): Promise<LoadResult> {
  let next = 0;
  const result = await autocannon({
    url,
    method: 'POST',
    connections: options.connections,
    duration: options.seconds,
    requests: [
      {
        setupRequest: (request) => {
          const prepared = requests[next % requests.length]!;
          next += 1;
          return { ...request, method: 'POST', body: prepared.body, headers: prepared.headers };
        },
      },
    ],
  });
  const ok = result['2xx'];
  return {
    requests: result.requests.total,
    ok,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    durationSeconds: result.duration,
    okPerSecond: ok / result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
  };
}
