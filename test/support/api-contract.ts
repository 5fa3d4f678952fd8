import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { Middleware } from 'openapi-fetch';
import { openApiDocument } from '../../services/console/api/document.ts';

// Checks every answer of the management API against the committed OpenAPI document: the status is
// one the operation documents (else its `default`), the media type is the documented one, the
// documented headers that matter are there, and the body validates against the documented schema
// (ajv, JSON Schema 2020-12 as OpenAPI 3.1 uses it, with formats: date-time is RFC 3339). Each
// (operation, status) seen is recorded, so a test can require that every documented answer was
// produced at least once.

type Json = Record<string, unknown>;

interface Operation {
  readonly id: string;
  readonly method: string;
  readonly path: string;
  readonly responses: Record<string, Json>;
}

export interface Seen {
  readonly operation: string;
  readonly status: number;
}

export class ContractChecker {
  readonly document: Json;
  readonly operations: Operation[];
  readonly seen: Seen[] = [];
  readonly failures: string[] = [];
  private readonly ajv: Ajv2020;
  private readonly validators = new Map<string, ValidateFunction>();

  constructor(document: Json = openApiDocument()) {
    this.document = document;
    this.ajv = new Ajv2020({ strict: true, allErrors: true, strictTypes: false });
    addFormats.default(this.ajv);
    // OpenAPI's own keywords inside schemas.
    this.ajv.addKeyword('example');
    const schemas = (document.components as { schemas: Json }).schemas;
    this.ajv.addSchema(
      JSON.parse(this.rewrite(JSON.stringify({ $id: 'openapi-components', $defs: schemas }))),
    );
    this.operations = Object.entries(document.paths as Record<string, Record<string, Json>>).flatMap(
      ([path, item]) =>
        Object.entries(item)
          .filter(([method]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
          .map(([method, operation]) => ({
            id: operation.operationId as string,
            method: method.toUpperCase(),
            path,
            responses: operation.responses as Record<string, Json>,
          })),
    );
  }

  /** Every (operation, status) the document promises, `default` aside. */
  documented(): Seen[] {
    return this.operations.flatMap((operation) =>
      Object.keys(operation.responses)
        .filter((status) => status !== 'default')
        .map((status) => ({ operation: operation.id, status: Number(status) })),
    );
  }

  /** What the document promises that no answer checked so far gave. */
  missing(): string[] {
    return this.documented()
      .filter((want) => !this.seen.some((s) => s.operation === want.operation && s.status === want.status))
      .map((want) => `${want.operation} ${want.status}`);
  }

  private resolve(value: Json): Json {
    let current = value;
    while (typeof current.$ref === 'string') {
      const parts = (current.$ref as string).replace(/^#\//, '').split('/');
      current = parts.reduce<Json>((node, part) => node[part] as Json, this.document);
    }
    return current;
  }

  /** The document's `#/components/schemas/X` as the schema added to ajv: `openapi-components#/$defs/X`. */
  private rewrite(text: string): string {
    return text.replaceAll('"#/components/schemas/', '"openapi-components#/$defs/');
  }

  private validator(ref: string, schema: Json): ValidateFunction {
    let validate = this.validators.get(ref);
    if (!validate) {
      validate = this.ajv.compile(JSON.parse(this.rewrite(JSON.stringify(schema))) as Json);
      this.validators.set(ref, validate);
    }
    return validate;
  }

  /** Checks one answer; returns its problems (also kept in `failures`). */
  check(
    method: string,
    path: string,
    status: number,
    contentType: string,
    headers: Headers,
    body: unknown,
  ): string[] {
    const operation = this.operations.find((o) => o.method === method && o.path === path);
    const where = `${method} ${path} → ${status}`;
    if (!operation) return this.fail([`${where}: no such operation in the document`]);
    this.seen.push({ operation: operation.id, status });
    const documented = operation.responses[String(status)] ?? operation.responses.default;
    if (!documented) return this.fail([`${where}: status not documented`]);
    if (!operation.responses[String(status)] && status < 500)
      return this.fail([`${where}: a ${status} is not documented (only 5xx may fall to default)`]);
    const response = this.resolve(documented);
    const problems: string[] = [];
    for (const [name, header] of Object.entries((response.headers ?? {}) as Record<string, Json>)) {
      // Idempotent-Replayed is there on replays only.
      if (name === 'Idempotent-Replayed') continue;
      if (!headers.has(name)) problems.push(`${where}: header ${name} missing`);
      void header;
    }
    const content = response.content as Record<string, { schema: Json }> | undefined;
    if (!content) return this.fail(problems);
    const mediaType = contentType.split(';')[0]!.trim();
    const entry = content[mediaType];
    if (!entry) return this.fail([...problems, `${where}: media type ${mediaType} not documented`]);
    const validate = this.validator(`${operation.id} ${status} ${mediaType}`, entry.schema);
    if (!validate(body))
      problems.push(
        `${where}: ${this.ajv.errorsText(validate.errors, { separator: '; ' })}\n${JSON.stringify(body).slice(0, 1500)}`,
      );
    return this.fail(problems);
  }

  private fail(problems: string[]): string[] {
    this.failures.push(...problems);
    return problems;
  }

  /** An openapi-fetch middleware checking every answer the client receives. */
  middleware(): Middleware {
    return {
      onResponse: async ({ request, response, schemaPath }) => {
        const text = await response.clone().text();
        let body: unknown = text;
        try {
          body = text === '' ? undefined : JSON.parse(text);
        } catch {}
        this.check(
          request.method,
          schemaPath,
          response.status,
          response.headers.get('content-type') ?? '',
          response.headers,
          body,
        );
        return undefined;
      },
    };
  }
}
