import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

/** The committed OpenAPI document (openapi.yaml beside this file), as the JSON /api/v1/openapi.json serves. */
export const OPENAPI_PATH = join(dirname(fileURLToPath(import.meta.url)), 'openapi.yaml');

export function openApiDocument(): Record<string, unknown> {
  return parse(readFileSync(OPENAPI_PATH, 'utf8')) as Record<string, unknown>;
}
