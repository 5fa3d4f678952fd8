import type { NextFunction, Request, Response } from 'express';
import { isLoopback } from '../settings.ts';

/**
 * The embedded demo's console has no sign-in: it trusts that only this machine reaches it. A page
 * on any site can break that trust by DNS rebinding (its own name, resolved to 127.0.0.1 a moment
 * later, makes the browser send that page's requests here as same-origin ones), so the demo
 * answers only requests addressed to a loopback name (`localhost`, 127.0.0.0/8, `[::1]`) or the
 * address it listens on; anything else gets 421. Outside the demo every request needs a
 * credential the browser keeps per host name (a session cookie, the proxy's), a bearer token
 * or the proxy's TCP address, none of which a rebinding page holds, so any Host is served there
 * (Ingress names, Service names, port-forwards).
 */
export interface HostRule {
  readonly demo: boolean;
  /** The address the console listens on. */
  readonly host: string;
}

/** The host name of a Host header or an origin's host (`[::1]:8081` → `::1`), lower-cased; null if malformed. */
function hostName(authority: string): string | null {
  try {
    const name = new URL(`http://${authority}/`).hostname.toLowerCase();
    return name.startsWith('[') && name.endsWith(']') ? name.slice(1, -1) : name;
  } catch {
    return null;
  }
}

/** Whether requests addressed to this Host (or coming from a page of this origin host) are this console's. */
export function hostAllowed(rule: HostRule, authority: string | undefined): boolean {
  if (!rule.demo) return true;
  if (authority === undefined || authority === '' || authority.length > 300) return false;
  const name = hostName(authority);
  if (name === null) return false;
  return name === 'localhost' || isLoopback(name) || name === rule.host.toLowerCase();
}

/** Refuses, with 421 and a sentence, a demo request addressed to a name that is not this machine's. */
export function hostCheck(rule: HostRule) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (hostAllowed(rule, req.headers.host)) {
      next();
      return;
    }
    const port = req.socket.localPort;
    res
      .status(421)
      .type('text/plain')
      .send(
        `This demo console (no sign-in) answers only requests addressed to this machine: open http://127.0.0.1:${port}/ or http://localhost:${port}/.\n`,
      );
  };
}
