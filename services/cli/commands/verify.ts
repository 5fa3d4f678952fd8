import { z } from 'zod';
import { loadConfig } from '../../core/config/load.ts';
import { withCommandPool } from '../database.ts';
import { terminalJson, writeOut } from '../support/terminal-text.ts';
import { type EndpointRoles, verifyRun } from '../verify/checks.ts';
import { renderReport } from '../verify/render.ts';
import { readSentFile } from '../verify/sent-file.ts';

export const verifyOptionsSchema = z.strictObject({
  sent: z.string({ error: 'is required: the file of acknowledged deliveries' }).min(1, 'names no file'),
  json: z.boolean().optional(),
  config: z.string().min(1).optional(),
});

const projectOptions = z.looseObject({ entityType: z.string().min(1).optional() });

/** With a configuration, each endpoint's handler says which checks apply to it. */
function rolesFrom(configFile: string | undefined): EndpointRoles {
  if (configFile === undefined) return { billing: null, project: null };
  const config = loadConfig(configFile);
  const billing = new Set<string>();
  const project = new Map<string, string>();
  for (const [name, endpoint] of Object.entries(config.endpoints)) {
    if (endpoint.handler === 'billing') billing.add(name);
    if (endpoint.handler === 'project') {
      const parsed = projectOptions.safeParse(endpoint.options);
      project.set(name, (parsed.success ? parsed.data.entityType : undefined) ?? 'entity');
    }
  }
  return { billing, project };
}

/**
 * `hookgate verify --sent FILE`: after a load run has drained, proves that every acknowledged
 * delivery is in the inbox once and settled, nothing is pending, every payment sent is in the
 * ledger once, and no entity is behind the newest version sent. Exit 1 on any violation.
 */
export async function verifyCommand(raw: unknown): Promise<void> {
  const options = verifyOptionsSchema.parse(raw);
  const roles = rolesFrom(options.config ?? (process.env.HOOKGATE_CONFIG?.trim() || undefined));
  const sent = await readSentFile(options.sent);
  const report = await withCommandPool('verify', 120_000, (pool) => verifyRun(pool, sent, roles));
  writeOut(options.json ? `${terminalJson(JSON.stringify(report))}\n` : renderReport(options.sent, report));
  if (!report.ok) process.exitCode = 1;
}
