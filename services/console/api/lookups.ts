import { ApiProblem } from './problems.ts';

/** A path's endpoint must be configured: else 404 endpoint_unknown, naming the configured ones. */
export function requireEndpoint(endpoints: readonly string[], name: string): string {
  if (endpoints.includes(name)) return name;
  throw new ApiProblem(
    'endpoint_unknown',
    `No endpoint ${name} is configured; the configured ones are ${endpoints.length > 0 ? endpoints.join(', ') : 'none'}.`,
  );
}
