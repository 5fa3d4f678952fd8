import { z } from 'zod';
import { isJsonPointer } from './json-pointer.ts';
import type { ContentPart, FieldSource, IdentitySpec, SchemeSpec } from './scheme-spec.ts';

/** `{timestamp}.{body}` → its parts; `{{` and `}}` are literal braces. Throws a sentence on a bad template. */
export function parseTemplate(template: string): ContentPart[] {
  const parts: ContentPart[] = [];
  let literal = '';
  const flush = () => {
    if (literal !== '') parts.push({ literal });
    literal = '';
  };
  for (let i = 0; i < template.length; i++) {
    const c = template[i];
    if (c === '{' && template[i + 1] === '{') {
      literal += '{';
      i++;
    } else if (c === '}' && template[i + 1] === '}') {
      literal += '}';
      i++;
    } else if (c === '{') {
      const end = template.indexOf('}', i);
      if (end < 0)
        throw new Error(`has a "{" at position ${i} that is never closed (write {{ for a literal brace)`);
      const name = template.slice(i + 1, end);
      flush();
      if (name.startsWith('header:') && /^header:[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(name)) {
        parts.push({ header: name.slice('header:'.length).toLowerCase() });
      } else if (['body', 'timestamp', 'id', 'method', 'url'].includes(name)) {
        parts.push({ part: name as 'body' | 'timestamp' | 'id' | 'method' | 'url' });
      } else {
        throw new Error(
          `names {${name}}, which is not one of {body}, {timestamp}, {id}, {method}, {url} or {header:Name}`,
        );
      }
      i = end;
    } else if (c === '}') {
      throw new Error(`has a "}" at position ${i} that closes nothing (write }} for a literal brace)`);
    } else {
      literal += c;
    }
  }
  flush();
  return parts;
}

const headerName = z
  .string()
  .regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'must be an HTTP header name such as X-Signature');
const pointer = z.string().refine(isJsonPointer, 'must be a JSON pointer such as /data/id');

const headerField = z.strictObject({ header: headerName });
const pointerField = z.strictObject({ pointer });
const fieldSchema = z.union([headerField, pointerField, z.literal('digest')]);

/** Options of the declarative `scheme` provider, as written in the configuration. */
export const schemeOptionsSchema = z
  .strictObject({
    algorithm: z.enum([
      'hmac-sha1',
      'hmac-sha256',
      'hmac-sha512',
      'ed25519',
      'ecdsa-p256-sha256',
      'rsa-sha256',
      'token',
    ]),
    /** The header carrying the signature; `headers` for several, any of which may match. */
    header: headerName.optional(),
    headers: z.array(headerName).min(1).max(4).optional(),
    encoding: z.enum(['hex', 'base64', 'base64url', 'text']).default('hex'),
    prefix: z.string().max(64).optional(),
    list: z
      .strictObject({
        separator: z.string().min(1).max(4),
        assign: z.string().min(1).max(4),
        versions: z.array(z.string().min(1).max(16)).min(1),
        timestamp: z.string().min(1).max(16).optional(),
      })
      .optional(),
    /** The signed content as a template: `{timestamp}.{body}`. Ignored (and not allowed) for `token`. */
    content: z.string().max(512).optional(),
    secretFormat: z.enum(['utf8', 'base64', 'hex', 'whsec']).optional(),
    timestamp: z
      .union([
        z.strictObject({ header: headerName, unit: z.enum(['seconds', 'milliseconds', 'rfc3339']) }),
        z.strictObject({ list: z.literal(true), unit: z.enum(['seconds', 'milliseconds', 'rfc3339']) }),
        z.strictObject({ pointer, unit: z.enum(['seconds', 'milliseconds', 'rfc3339']) }),
      ])
      .optional(),
    /** Where the event id is: a header, a JSON pointer, or `digest` (the body's SHA-256). */
    id: fieldSchema,
    /** Where the event type is; absent, `unknown`. */
    type: z.union([headerField, pointerField, z.strictObject({ value: z.string().min(1) })]).optional(),
  })
  .superRefine((options, ctx) => {
    const issue = (path: PropertyKey[], message: string) => ctx.addIssue({ code: 'custom', path, message });
    if ((options.header === undefined) === (options.headers === undefined))
      issue(['header'], 'set header (or headers for several), not both');
    const token = options.algorithm === 'token';
    let parts: ContentPart[] = [];
    if (token) {
      if (options.content !== undefined)
        issue(['content'], 'is not used by algorithm token: nothing is signed');
      if (options.timestamp !== undefined)
        issue(['timestamp'], 'is not used by algorithm token: nothing is signed');
      if (options.encoding !== 'text' && options.encoding !== 'base64')
        issue(['encoding'], 'must be text or base64 for algorithm token');
    } else {
      if (options.encoding === 'text') issue(['encoding'], 'text is only for algorithm token');
      if (options.content === undefined)
        issue(['content'], 'is required: the signed content, e.g. "{timestamp}.{body}"');
      else {
        try {
          parts = parseTemplate(options.content);
        } catch (error) {
          issue(['content'], (error as Error).message);
          return;
        }
        const has = (name: string) => parts.some((piece) => 'part' in piece && piece.part === name);
        // A signature that does not cover the body authenticates nothing the gateway stores.
        if (!has('body')) issue(['content'], 'must sign the body: include {body}');
        if (has('timestamp') && options.timestamp === undefined)
          issue(['timestamp'], 'is required when content signs {timestamp}');
        if (options.timestamp && !('pointer' in options.timestamp) && !has('timestamp'))
          issue(['content'], 'must include {timestamp}: an unsigned timestamp proves nothing');
        if (has('id') && (typeof options.id !== 'object' || !('header' in options.id)))
          issue(['id'], 'must be a header when content signs {id}');
      }
    }
    if (options.secretFormat !== undefined && !options.algorithm.startsWith('hmac-'))
      issue(['secretFormat'], 'is only for hmac algorithms');
    if (options.timestamp && 'list' in options.timestamp && options.list?.timestamp === undefined)
      issue(['timestamp'], 'list: true needs list.timestamp, the entry that carries it');
    if (options.list?.timestamp !== undefined && !(options.timestamp && 'list' in options.timestamp))
      issue(['list', 'timestamp'], 'needs timestamp: { list: true, unit: ... }');
  });

export type SchemeOptions = z.output<typeof schemeOptionsSchema>;

function field(source: Exclude<SchemeOptions['id'], undefined>): FieldSource {
  if (source === 'digest') return { digest: true };
  return 'header' in source ? { header: source.header.toLowerCase() } : { pointer: source.pointer };
}

/** The configured options as a scheme and an identity spec. */
export function schemeFromOptions(options: SchemeOptions): { scheme: SchemeSpec; identity: IdentitySpec } {
  const headers = (options.headers ?? [options.header ?? '']).map((name) => name.toLowerCase());
  const timestamp = options.timestamp;
  const idHeader = typeof options.id === 'object' && 'header' in options.id ? options.id.header : undefined;
  const scheme: SchemeSpec = {
    algorithm: options.algorithm,
    headers,
    encoding: options.encoding,
    ...(options.prefix === undefined ? {} : { prefix: options.prefix }),
    ...(options.list === undefined
      ? {}
      : {
          list: {
            separator: options.list.separator,
            assign: options.list.assign,
            versions: options.list.versions,
            ...(options.list.timestamp === undefined ? {} : { timestamp: options.list.timestamp }),
          },
        }),
    content:
      options.algorithm === 'token' || options.content === undefined ? [] : parseTemplate(options.content),
    ...(options.secretFormat === undefined ? {} : { secretFormat: options.secretFormat }),
    ...(timestamp === undefined
      ? {}
      : {
          timestamp: {
            from:
              'header' in timestamp
                ? { header: timestamp.header.toLowerCase() }
                : 'pointer' in timestamp
                  ? { pointer: timestamp.pointer }
                  : { list: true },
            unit: timestamp.unit,
          },
        }),
    ...(idHeader === undefined ? {} : { idHeader: idHeader.toLowerCase() }),
  };
  const type = options.type;
  const identity: IdentitySpec = {
    eventId: field(options.id),
    eventType:
      type === undefined ? { literal: 'unknown' } : 'value' in type ? { literal: type.value } : field(type),
    ...(type !== undefined && 'header' in type ? { keep: [type.header.toLowerCase()] } : {}),
  };
  return { scheme, identity };
}
