import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { ConsoleContext } from './context.ts';
import { actionPreview, actionRun } from './pages/action.ts';
import { auditPage } from './pages/audit.ts';
import { destinationsPage } from './pages/destinations.ts';
import { eventPage } from './pages/event.ts';
import { eventsPage } from './pages/events.ts';
import { loginPage, loginSubmit, logoutSubmit } from './pages/login.ts';
import { overviewPage } from './pages/overview.ts';
import { quarantinedPage, quarantinePage } from './pages/quarantine.ts';
import type { ConsoleAuth } from './security/auth.ts';
import { cspReports } from './security/csp-reports.ts';
import { securityHeaders } from './security/headers.ts';
import { hostCheck } from './security/host-check.ts';
import { requireOperator } from './security/roles.ts';

const STYLESHEET = readFileSync(join(dirname(fileURLToPath(import.meta.url)), 'assets/console.css'), 'utf8');

type Handler = (context: ConsoleContext, req: Request, res: Response) => Promise<void>;

export interface ConsoleAppDeps {
  readonly context: ConsoleContext;
  readonly auth: ConsoleAuth;
  /** Readiness: null when the database answers, else why not. */
  readonly ready: () => Promise<string | null>;
  /** The management API (services/console/api/), mounted at /api/v1 with its own sign-in: tokens. */
  readonly api?: express.Router;
}

/** The console's HTTP surface; every route but the probes, the stylesheet and sign-in needs a viewer. */
export function createConsoleApp({ context, auth, ready, api }: ConsoleAppDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.use(securityHeaders);
  app.use(hostCheck(auth.settings));
  const form = express.urlencoded({ extended: false, limit: '32kb', parameterLimit: 50 });
  const page =
    (handler: Handler) =>
    (req: Request, res: Response, next: NextFunction): void => {
      handler(context, req, res).catch(next);
    };

  app.get('/healthz', (_req, res) => {
    res.type('text/plain').send('ok\n');
  });
  app.get('/readyz', async (_req, res) => {
    const why = await ready();
    res
      .status(why ? 503 : 200)
      .type('text/plain')
      .send(why ? `${why}\n` : 'ready\n');
  });
  app.get('/assets/console.css', (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.type('text/css').send(STYLESHEET);
  });
  app.post(
    '/csp-report',
    cspReports(context.logger, (req) => auth.source(req)),
  );

  app.get('/login', (req, res) => loginPage(auth, req, res));
  app.post('/login', form, (req, res, next) => {
    loginSubmit(auth, req, res).catch(next);
  });

  if (api) app.use('/api/v1', api);

  app.use(auth.requireViewer);
  app.post('/logout', form, auth.requireCsrf, (req, res) => logoutSubmit(auth, req, res));
  app.get('/', page(overviewPage));
  app.get('/events', page(eventsPage));
  app.get('/events/:endpoint/:eventId', page(eventPage));
  app.get('/destinations', page(destinationsPage));
  app.get('/quarantine', page(quarantinePage));
  app.get('/quarantine/:id', page(quarantinedPage));
  app.get('/audit', page(auditPage));
  app.post('/actions/:action/preview', requireOperator, form, auth.requireCsrf, page(actionPreview));
  app.post('/actions/:action', requireOperator, form, auth.requireCsrf, page(actionRun));

  app.use((_req: Request, res: Response) => {
    res.status(404).type('text/plain').send('Not found.\n');
  });
  app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const status = (error as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      res.status(status).type('text/plain').send('The request could not be read.\n');
      return;
    }
    context.logger.error({ err: error }, 'console: a request failed');
    res.status(500).type('text/plain').send('Something went wrong; it was logged.\n');
  });
  return app;
}
