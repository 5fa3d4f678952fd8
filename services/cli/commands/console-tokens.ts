import { randomBytes } from 'node:crypto';
import { stringify } from 'yaml';
import { z } from 'zod';
import { tokenDigest } from '../../console/security/tokens.ts';
import { tokenUses } from '../../core/api/token-use.ts';
import { CONSOLE_ROLES } from '../../core/config/console-schema.ts';
import { withCommandPool } from '../database.ts';
import { printJson, table } from '../support/format.ts';
import { commandConfig } from '../support/options.ts';
import { writeOut } from '../support/terminal-text.ts';

// Access tokens for the console's pages and its API (console.tokens): `hookgate console new-token`
// makes one (the secret is printed once and stored nowhere; the configuration keeps its SHA-256),
// `hookgate console tokens` lists the configured ones with their role and last use, never a secret.

export const newTokenOptionsSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9._@+-]{1,100}$/, 'uses letters, digits and . _ @ + - (at most 100)'),
  role: z.enum(CONSOLE_ROLES, { error: 'must be viewer or operator' }).default('operator'),
  json: z.boolean().optional(),
});

/** `hookgate console new-token --name N [--role viewer|operator]`. */
export function newTokenCommand(raw: unknown): void {
  const options = newTokenOptionsSchema.parse(raw);
  // 32 random bytes: a guess costs 2^256 tries, so a fast hash (SHA-256) stores it safely.
  const token = `hgt_${randomBytes(32).toString('base64url')}`;
  const entry = { name: options.name, sha256: tokenDigest(token).toString('hex'), role: options.role };
  if (options.json) {
    printJson({ ...entry, token });
    return;
  }
  writeOut(
    `Token for ${options.name} (${options.role}); shown once, stored nowhere: give it to the script that uses it.\n` +
      `  ${token}\n\nAdd this to console.tokens in the configuration (then restart or roll the console):\n` +
      stringify([entry])
        .split('\n')
        .map((line) => (line ? `  ${line}` : line))
        .join('\n'),
  );
}

export const tokensOptionsSchema = z.strictObject({
  json: z.boolean().optional(),
  config: z.string().min(1).optional(),
});

/** `hookgate console tokens`: the configured tokens, their roles and last use. */
export async function tokensCommand(raw: unknown): Promise<void> {
  const options = tokensOptionsSchema.parse(raw);
  const config = commandConfig(options.config, true)!;
  const tokens = config.console.tokens;
  await withCommandPool('console-tokens', 30_000, async (pool) => {
    const uses = await tokenUses(
      pool,
      tokens.map((token) => token.name),
    );
    const rows = tokens.map((token) => ({
      name: token.name,
      role: token.role,
      last_used_at: uses.get(token.name)?.last_used_at.toISOString() ?? null,
      last_source: uses.get(token.name)?.last_source ?? null,
    }));
    if (options.json) {
      printJson(rows);
      return;
    }
    writeOut(
      table(
        ['NAME', 'ROLE', 'LAST USED', 'FROM'],
        rows.map((row) => [row.name, row.role, row.last_used_at ?? 'never', row.last_source ?? '-']),
      ),
    );
  });
}
