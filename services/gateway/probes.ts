import type express from 'express';

// Kubernetes' probes: /healthz says the process is alive; /readyz says whether this pod should
// receive deliveries (database reachable, migrations current, not draining for a shutdown).

/** Longest /readyz waits for the readiness check before answering not ready (probes time out in 1–5 s). */
export const READINESS_TIMEOUT_MS = 2_000;

export interface ProbeDeps {
  /** Null when ready, else the reason. */
  readonly readiness: () => Promise<string | null>;
  readonly readinessTimeoutMs?: number;
  /** Draining for a shutdown: /readyz says so; deliveries are still served (see drain.ts). */
  readonly shuttingDown: () => boolean;
}

export function mountProbes(app: express.Express, deps: ProbeDeps): void {
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });

  // One check at a time: probes arriving while the database hangs share it instead of piling up.
  let readinessCheck: Promise<string | null> | null = null;
  const readinessTimeoutMs = deps.readinessTimeoutMs ?? READINESS_TIMEOUT_MS;
  app.get('/readyz', async (_req, res) => {
    if (deps.shuttingDown()) {
      res.status(503).json({ status: 'shutting_down' });
      return;
    }
    readinessCheck ??= deps.readiness().finally(() => {
      readinessCheck = null;
    });
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<string>((resolve) => {
      timer = setTimeout(
        () => resolve(`database did not answer within ${readinessTimeoutMs} ms`),
        readinessTimeoutMs,
      );
    });
    const reason = await Promise.race([readinessCheck, timedOut]);
    clearTimeout(timer);
    if (reason) res.status(503).json({ status: 'not_ready', reason });
    else res.json({ status: 'ready' });
  });
}
