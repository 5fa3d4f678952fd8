import createClient, { type Middleware } from 'openapi-fetch';
import type { paths } from '../../services/console/api/schema.ts';

// The tests' client of the management API: openapi-fetch over the types openapi-typescript
// generated from the committed document (services/console/api/schema.ts, `make api-schema`), so a
// route, a parameter or an answer the document does not describe is a type error in the tests.

export type ApiClient = ReturnType<typeof createClient<paths>>;

export function apiClient(
  consoleUrl: string,
  token: string | null,
  middleware: readonly Middleware[] = [],
): ApiClient {
  const client = createClient<paths>({
    baseUrl: new URL('api/v1', consoleUrl).toString(),
    headers: token === null ? {} : { authorization: `Bearer ${token}` },
  });
  for (const one of middleware) client.use(one);
  return client;
}
