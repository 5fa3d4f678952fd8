import express, { type Request, type Response } from 'express';
import type { Logger } from '../../core/logging.ts';

export interface ReportLimits {
  readonly overall: number;
  readonly perSource: number;
  readonly windowMs: number;
  readonly maxSources: number;
}

/** Reports logged a minute, from all sources together and from any one source. */
export const CSP_REPORT_LIMITS: ReportLimits = {
  overall: 20,
  perSource: 5,
  windowMs: 60_000,
  maxSources: 1_000,
};

/**
 * How many policy reports are logged. Anyone who reaches the console can post reports (browsers
 * send them without credentials), so one source gets at most `perSource` lines a window and all
 * of them together `overall`: a flood from one address leaves the rest of the budget to the
 * reports real browsers send. Sources beyond `maxSources` in one window share one allowance.
 * What is not logged is counted, and the count is logged once the window is over.
 */
export class ReportBudget {
  private window = Number.NEGATIVE_INFINITY;
  private logged = 0;
  private dropped = 0;
  private readonly bySource = new Map<string, number>();

  private readonly limits: ReportLimits;

  constructor(limits: ReportLimits = CSP_REPORT_LIMITS) {
    this.limits = limits;
  }

  /**
   * Whether a report from `source` may be logged at `now`; `closed` is the count of reports left
   * out in the window that just ended (0 when none ended, or none were), to be logged once.
   */
  take(source: string, now: number): { readonly log: boolean; readonly closed: number } {
    let closed = 0;
    const window = Math.floor(now / this.limits.windowMs);
    if (window !== this.window) {
      closed = this.dropped;
      this.window = window;
      this.logged = 0;
      this.dropped = 0;
      this.bySource.clear();
    }
    const key = this.bySource.has(source) || this.bySource.size < this.limits.maxSources ? source : '';
    const mine = this.bySource.get(key) ?? 0;
    if (this.logged >= this.limits.overall || mine >= this.limits.perSource) {
      this.dropped += 1;
      return { log: false, closed };
    }
    this.bySource.set(key, mine + 1);
    this.logged += 1;
    return { log: true, closed };
  }
}

/**
 * Where browsers report what the Content-Security-Policy blocked (report-uri). Each report is
 * logged at warn with its directive and blocked URI, within a ReportBudget: a report means
 * something tried to run or load in a console page. Unauthenticated by necessity (browsers send
 * reports on their own); answered 204 always.
 */
export function cspReports(logger: Logger, sourceOf: (req: Request) => string, now: () => number = Date.now) {
  const parse = express.json({
    limit: '16kb',
    type: ['application/csp-report', 'application/reports+json', 'application/json'],
  });
  const budget = new ReportBudget();
  return [
    parse,
    (req: Request, res: Response) => {
      const source = sourceOf(req);
      const body = req.body as Record<string, unknown> | unknown[] | undefined;
      const reports = Array.isArray(body) ? body.slice(0, 100) : [body];
      for (const report of reports) {
        const { log, closed } = budget.take(source, now());
        if (closed > 0)
          logger.warn(
            { dropped: closed, limits: CSP_REPORT_LIMITS },
            'console: content security policy reports over the budget were not logged',
          );
        if (!log) continue;
        const inner = ((report as Record<string, unknown> | undefined)?.['csp-report'] ??
          (report as Record<string, unknown> | undefined)?.body ??
          {}) as Record<string, unknown>;
        const text = (value: unknown) => (typeof value === 'string' ? value.slice(0, 200) : undefined);
        logger.warn(
          {
            directive: text(
              inner['violated-directive'] ?? inner.effectiveDirective ?? inner['effective-directive'],
            ),
            blocked: text(inner['blocked-uri'] ?? inner.blockedURL),
            page: text(inner['document-uri'] ?? inner.documentURL),
            source,
          },
          'console: content security policy violation',
        );
      }
      res.status(204).end();
    },
  ];
}
