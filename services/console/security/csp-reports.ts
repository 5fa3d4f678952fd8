import express, { type Request, type Response } from 'express';
import type { Logger } from '../../core/logging.ts';

const LOGGED_PER_MINUTE = 20;

/**
 * Where browsers report what the Content-Security-Policy blocked (report-uri). Each report is
 * logged at warn with its directive and blocked URI (at most LOGGED_PER_MINUTE a minute, so a page
 * cannot flood the logs): a report means something tried to run or load in a console page.
 * Unauthenticated by necessity (browsers send reports on their own); answered 204 always.
 */
export function cspReports(logger: Logger) {
  const parse = express.json({
    limit: '16kb',
    type: ['application/csp-report', 'application/reports+json', 'application/json'],
  });
  let minute = 0;
  let logged = 0;
  return [
    parse,
    (req: Request, res: Response) => {
      const now = Math.floor(Date.now() / 60_000);
      if (now !== minute) {
        minute = now;
        logged = 0;
      }
      const body = req.body as Record<string, unknown> | unknown[] | undefined;
      const reports = Array.isArray(body) ? body : [body];
      for (const report of reports) {
        if (logged >= LOGGED_PER_MINUTE) break;
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
          },
          'console: content security policy violation',
        );
        logged += 1;
      }
      res.status(204).end();
    },
  ];
}
