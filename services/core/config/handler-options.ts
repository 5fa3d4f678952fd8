import type { z } from 'zod';
import { billingOptionsSchema } from '../handlers/billing.ts';
import { forwardOptionsSchema } from '../handlers/forward.ts';
import { projectOptionsSchema } from '../handlers/project.ts';
import { recordOptionsSchema } from '../handlers/record.ts';
import { sqlOptionsSchema } from '../handlers/sql.ts';

/**
 * The built-in handlers' option schemas, so the configuration is checked whole at load time
 * (the handlers check again when they are built). `module:` handlers own their options.
 */
export function handlerOptionsSchema(handler: unknown): z.ZodType | null {
  if (typeof handler !== 'string') return null;
  if (handler === 'record') return recordOptionsSchema;
  if (handler === 'project') return projectOptionsSchema;
  if (handler === 'billing') return billingOptionsSchema;
  if (handler === 'forward') return forwardOptionsSchema;
  if (handler.startsWith('sql:')) return sqlOptionsSchema;
  return null;
}
