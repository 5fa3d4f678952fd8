import type { NextFunction, Request, Response } from 'express';

/**
 * No script runs in the console: every page is rendered on the server and works with links and
 * forms alone, so the policy allows none (default-src 'none' covers script-src), only the
 * console's own stylesheet and images, forms posting back to itself, and no framing. A payload
 * that got past escaping could therefore still not run; the browser reports any attempt to
 * /csp-report, which logs it.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "style-src 'self'",
  "img-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  'report-uri /csp-report',
].join('; ');

export function securityHeaders(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader('Content-Security-Policy', CONTENT_SECURITY_POLICY);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('X-Frame-Options', 'DENY');
  // same-origin, not no-referrer: with no-referrer browsers send `Origin: null` on form posts, which
  // the CSRF check refuses; other sites still get no referrer (payload ids stay in the console).
  res.setHeader('Referrer-Policy', 'same-origin');
  res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
  res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
  res.setHeader('Permissions-Policy', 'camera=(), microphone=(), geolocation=(), payment=()');
  // Pages show payloads: no shared cache, no back-forward copy after signing out.
  res.setHeader('Cache-Control', 'no-store');
  next();
}
