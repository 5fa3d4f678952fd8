import { z } from 'zod';
import { processConnections } from '../../core/config/connections.ts';
import { referencedVariables } from '../../core/config/interpolate.ts';
import { readConfigDocument } from '../../core/config/load.ts';
import { checkConfiguration } from '../support/config-checks.ts';
import { printJson } from '../support/format.ts';
import { configPath } from '../support/options.ts';
import { writeOut } from '../support/terminal-text.ts';

export const configCheckOptionsSchema = z.strictObject({
  config: z.string().min(1).optional(),
  json: z.boolean().optional(),
});

/** `hookgate config check`: refuse (exit 2) what `serve` would refuse at start; else say so. */
export async function configCheckCommand(raw: unknown): Promise<void> {
  const options = configCheckOptionsSchema.parse(raw);
  const file = configPath(options.config);
  const config = checkConfiguration(file);
  const endpoints = Object.keys(config.endpoints);
  const connections = {
    gateway: processConnections(config, 'gateway'),
    worker: processConnections(config, 'worker'),
    all: processConnections(config, 'all'),
  };
  // What its ${NAME} references need from the environment (the chart's Secret lists the same).
  const variables = referencedVariables(readConfigDocument(file));
  if (options.json) {
    printJson({ file, valid: true, endpoints, connections, variables });
    return;
  }
  writeOut(
    `${file} is valid: ${endpoints.length} endpoint${endpoints.length === 1 ? '' : 's'} (${endpoints.join(', ')}).\n` +
      `PostgreSQL connections per process at most: gateway ${connections.gateway}, worker ${connections.worker}, all ${connections.all}.\n` +
      `Environment variables its \${NAME} references need: ${variables.length > 0 ? variables.join(', ') : 'none'}.\n`,
  );
}
