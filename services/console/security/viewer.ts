import type { Request } from 'express';
import type { ConsoleRole } from '../../core/config/console-schema.ts';

/** Who is looking at a page, and how they got in. */
export interface Viewer {
  readonly name: string;
  readonly via: 'password' | 'token' | 'proxy' | 'demo';
  /** viewer: every page, no action; operator: the actions too (services/console/security/roles.ts). */
  readonly role: ConsoleRole;
  /** What this viewer's CSRF tokens are bound to; null for bearer tokens (no ambient credential). */
  readonly csrfBinding: string | null;
  /** The CSRF token every form of this viewer's pages carries. */
  readonly csrf: string;
}

export function viewerOf(req: Request): Viewer {
  const viewer = (req as Request & { viewer?: Viewer }).viewer;
  if (!viewer) throw new Error('console route reached without a signed-in viewer');
  return viewer;
}

export function setViewer(req: Request, viewer: Viewer): void {
  (req as Request & { viewer?: Viewer }).viewer = viewer;
}
