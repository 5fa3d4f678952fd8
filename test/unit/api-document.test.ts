import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { OPENAPI_PATH, openApiDocument } from '../../services/console/api/document.ts';
import { apiStatusOf } from '../../services/console/api/problems.ts';
import { ERROR_CODES, type ErrorCode } from '../../services/core/error-codes.ts';

// The management API's committed document, its generated types and its router say the same thing:
// the types (services/console/api/schema.ts, which the server's answers and the tests' client are
// typed with) were generated from this very document (`make api-schema` writes its digest in the
// file; `make lint` regenerates and compares the whole file), and the router serves exactly the
// document's operations.

const document = openApiDocument() as {
  paths: Record<
    string,
    Record<string, { operationId?: string; responses: Record<string, { $ref?: string }> }>
  >;
  components: { responses: Record<string, { description: string }> };
};
const schema = readFileSync('services/console/api/schema.ts', 'utf8');
const router = readFileSync('services/console/api/router.ts', 'utf8');

describe('the management API document', () => {
  it('is the one services/console/api/schema.ts was generated from (else: make api-schema)', () => {
    const digest = createHash('sha256').update(readFileSync(OPENAPI_PATH)).digest('hex');
    expect(schema.split('\n')[1]).toBe(`// openapi.yaml sha256 ${digest}`);
  });

  it('describes exactly the routes the router serves', () => {
    const served = [...router.matchAll(/router\.(get|post)\('([^']+)'/g)]
      .map(([, method, path]) => `${method!.toUpperCase()} ${path!.replace(/:(\w+)/g, '{$1}')}`)
      .sort();
    const documented = Object.entries(document.paths)
      .flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`))
      .sort();
    expect(served).toEqual(documented);
    expect(served.length).toBeGreaterThan(20);
  });

  it('names each error by a code of the catalogue, answered with the status it documents', () => {
    const named = (text: string) => [...text.matchAll(/`([a-z_]+)`/g)].map(([, code]) => code!);
    const statuses: Record<string, number> = {
      BadRequest: 400,
      Unauthorized: 401,
      Forbidden: 403,
      NotFound: 404,
      KeyInProgress: 409,
      PreconditionFailed: 412,
      TooLarge: 413,
      UnsupportedMediaType: 415,
      KeyReused: 422,
      RateLimited: 429,
    };
    for (const [name, status] of Object.entries(statuses)) {
      const codes = named(document.components.responses[name]!.description);
      expect(codes.length, name).toBeGreaterThan(0);
      for (const code of codes) {
        expect(Object.hasOwn(ERROR_CODES, code), `${name}: ${code}`).toBe(true);
        expect([name, code, apiStatusOf(code as ErrorCode)]).toEqual([name, code, status]);
      }
    }
  });
});
