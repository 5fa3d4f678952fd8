import type { Request, Response } from 'express';
import { tokenUses } from '../../../core/api/token-use.ts';
import { callerOf } from '../caller.ts';
import type { ApiContext } from '../context.ts';
import { iso } from '../params.ts';
import type { components } from '../schema.ts';

type Schemas = components['schemas'];

/** GET /me: the caller, as the audit trail names it. */
export async function getMe(_context: ApiContext, req: Request, res: Response): Promise<void> {
  const caller = callerOf(req);
  const body: Schemas['Caller'] = { name: caller.name, role: caller.role, via: caller.via };
  res.json(body);
}

/** GET /tokens: every configured token's name and role, and its last use; never its secret or digest. */
export async function listTokens(context: ApiContext, _req: Request, res: Response): Promise<void> {
  const tokens = context.settings.tokens;
  const uses = await tokenUses(
    context.pool,
    tokens.map((token) => token.name),
  );
  const body: Schemas['TokenList'] = {
    items: tokens.map((token) => {
      const use = uses.get(token.name);
      return {
        name: token.name,
        role: token.role,
        last_used_at: iso(use?.last_used_at),
        last_source: use?.last_source ?? null,
      };
    }),
    next_cursor: null,
  };
  res.json(body);
}
