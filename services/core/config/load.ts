import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import type { z } from 'zod';
import { HookgateError } from '../errors.ts';
import { connectionBoundProblem } from './connection-bound.ts';
import { noteDestinationSecrets } from './destination-secrets.ts';
import { formatDuration, formatSize, isDurationText, isSizeText } from './duration.ts';
import { forwardProblems, withoutForward } from './forward-refused.ts';
import { NAMED_HANDLERS } from './handler-kinds.ts';
import {
  FILE_REFERENCE,
  type FileReferenceProblem,
  type InterpolationProblem,
  interpolateEnv,
  markFileReferences,
  resolveFileReferences,
  resolveReferences,
} from './interpolate.ts';
import { type Config, configSchema } from './schema.ts';
import { literalSecretProblems } from './secret-literals.ts';
import { closest } from './suggest.ts';

/** `endpoints.stripe.secrets[0]` */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out ? `.${String(key)}` : String(key);
  }
  return out || '(top level)';
}

/** The value at an issue's path in the document validated (the validator does not report it). */
function valueAt(document: unknown, path: readonly PropertyKey[]): unknown {
  let node = document;
  for (const key of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

/**
 * A bound the value is outside of, in the units the user wrote it in (`48h is longer than the
 * 24h maximum`), rather than the validator's milliseconds or bytes. undefined for other issues.
 */
function describeBound(issue: z.core.$ZodIssue, value: unknown): string | undefined {
  if (issue.code !== 'too_big' && issue.code !== 'too_small') return undefined;
  if (issue.origin !== 'number') return undefined;
  const big = issue.code === 'too_big';
  const bound = Number(big ? issue.maximum : issue.minimum);
  const inclusive = issue.inclusive !== false;
  const limit = big ? 'maximum' : 'minimum';
  if (isDurationText(value)) {
    const text = value.trim();
    const shown = formatDuration(bound, text);
    if (!inclusive) return `${text} must be ${big ? 'shorter' : 'longer'} than ${shown}`;
    return `${text} is ${big ? 'longer' : 'shorter'} than the ${shown} ${limit}`;
  }
  if (isSizeText(value)) {
    const text = value.trim();
    const shown = formatSize(bound, text);
    if (!inclusive) return `${text} must be ${big ? 'smaller' : 'larger'} than ${shown}`;
    return `${text} is ${big ? 'larger' : 'smaller'} than the ${shown} ${limit}`;
  }
  if (typeof value === 'number') {
    if (!inclusive) return `${value} must be ${big ? 'less' : 'more'} than ${bound}`;
    return `${value} is ${big ? 'more' : 'less'} than the ${bound} ${limit}`;
  }
  return undefined;
}

/**
 * `shown`: the document with every string the environment or a file filled in as written
 * (`${NAME}`), for the parts of a message that quote a value as it stands.
 */
function describeIssue(issue: z.core.$ZodIssue, document: unknown, shown: unknown = document): string {
  const path = formatPath(issue.path);
  const bound = describeBound(issue, valueAt(document, issue.path));
  if (bound) return `${path}: ${bound}`;
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys.map((key) => formatPath([...issue.path, key])).join(', ');
    return `${keys}: unknown key${issue.keys.length > 1 ? 's' : ''}`;
  }
  if (issue.code === 'invalid_key') {
    return `${path}: ${issue.issues.map((inner) => inner.message).join('; ')}`;
  }
  if (issue.code === 'invalid_value' && issue.path.at(-1) === 'provider') {
    const values = issue.values.map(String);
    const input = valueAt(shown, issue.path);
    const given = typeof input === 'string' ? input : undefined;
    const meant = given === undefined ? undefined : closest(given, values);
    const named = given === undefined ? '' : ` "${given}"${meant ? ` (did you mean "${meant}"?)` : ''}`;
    return `${path}: unknown provider${named}; use one of ${values.join(', ')}`;
  }
  if (issue.code === 'invalid_type') {
    const input = valueAt(document, issue.path);
    if (input === undefined) return `${path}: is required${REQUIRED_HINTS[String(issue.path.at(-1))] ?? ''}`;
    return `${path}: must be ${KINDS[issue.expected] ?? issue.expected}, not ${kindOf(valueAt(shown, issue.path))}`;
  }
  if (issue.code === 'invalid_format' && issue.path.at(-1) === 'handler' && issue.path[0] === 'endpoints') {
    const input = valueAt(shown, issue.path);
    const meant = typeof input === 'string' ? closest(input, Object.keys(NAMED_HANDLERS)) : undefined;
    return `${path}: ${meant ? `unknown handler "${String(input)}" (did you mean "${meant}"?); ` : ''}${issue.message}`;
  }
  return `${path}: ${issue.message}`;
}

/** The validator's type names in the words of a YAML file. */
const KINDS: Readonly<Record<string, string>> = {
  array: 'a list',
  object: 'a map of keys',
  string: 'text',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
};

function kindOf(value: unknown): string {
  if (value === null) return 'empty (null)';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a map of keys';
  if (typeof value === 'string') return `text ("${value.length > 40 ? `${value.slice(0, 40)}…` : value}")`;
  return typeof value === 'number' ? `the number ${value}` : String(value);
}

/** What a missing key holds, for the keys a new configuration most often forgets. */
const REQUIRED_HINTS: Readonly<Record<string, string>> = {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a ${NAME} reference, shown as the user writes it
  secrets: ': the endpoint\'s signing secrets, newest first, e.g. ["${STRIPE_WEBHOOK_SECRET}"]',
  provider: ': who signs the deliveries (stripe, github, standard-webhooks, …; docs/providers.md)',
  url: ': the http(s) URL to deliver to',
};

const readSecretFile = (file: string): string => readFileSync(file, 'utf8');

/** A string the environment or a file filled in: as written, as resolved, and each value it took. */
interface Interpolated {
  readonly path: string;
  readonly written: string;
  readonly resolved: string;
  /** Each value taken in, and the reference it came from (`${NAME}`, `${file:/path}`). */
  readonly values: ReadonlyMap<string, string>;
}

function interpolatedStrings(
  written: unknown,
  resolved: unknown,
  env: Readonly<Record<string, string | undefined>>,
  path: readonly PropertyKey[] = [],
  out: Interpolated[] = [],
): Interpolated[] {
  if (typeof written === 'string') {
    if (typeof resolved !== 'string' || resolved === written) return out;
    const values = new Map<string, string>();
    for (const [name, value] of resolveReferences(written, env).substituted) values.set(value, `\${${name}}`);
    if (new RegExp(`^${FILE_REFERENCE.source}$`).test(written)) values.set(resolved, written);
    out.push({ path: formatPath(path), written, resolved, values });
  } else if (Array.isArray(written)) {
    for (const [index, item] of written.entries())
      interpolatedStrings(
        item,
        Array.isArray(resolved) ? resolved[index] : undefined,
        env,
        [...path, index],
        out,
      );
  } else if (written !== null && typeof written === 'object') {
    const inner =
      resolved !== null && typeof resolved === 'object' ? (resolved as Record<string, unknown>) : {};
    for (const [key, item] of Object.entries(written))
      interpolatedStrings(item, inner[key], env, [...path, key], out);
  }
  return out;
}

/** `resolved` with each string the environment or a file filled in put back as `written` has it. */
function asWritten(resolved: unknown, written: unknown): unknown {
  if (typeof resolved === 'string') return typeof written === 'string' ? written : resolved;
  if (Array.isArray(resolved))
    return resolved.map((item, index) =>
      asWritten(item, Array.isArray(written) ? written[index] : undefined),
    );
  if (resolved !== null && typeof resolved === 'object') {
    const inner = written !== null && typeof written === 'object' ? (written as Record<string, unknown>) : {};
    return Object.fromEntries(
      Object.entries(resolved).map(([key, item]) => [key, asWritten(item, inner[key])]),
    );
  }
  return resolved;
}

/** Values this short are replaced only in their own key's line (a port, a count); longer ones everywhere. */
const SHORT_VALUE = 6;

/**
 * A problem line without the values the environment and files supplied: they may be secrets (a
 * `${STRIPE_SECRET}` put under a duration key by mistake), so a line names their references
 * instead. In its own key's line any value is replaced; elsewhere every value of SHORT_VALUE
 * characters or more.
 */
function withoutInterpolatedValues(line: string, strings: readonly Interpolated[]): string {
  let out = line;
  for (const string of strings) {
    const own = [':', '.', '['].some((next) => out.startsWith(`${string.path}${next}`));
    const pairs: Array<[string, string]> = [...string.values].filter(
      ([value]) => own || value.length >= SHORT_VALUE,
    );
    if (own) pairs.push([string.resolved, string.written], [string.resolved.trim(), string.written.trim()]);
    pairs.sort((a, b) => b[0].length - a[0].length);
    for (const [value, reference] of pairs) if (value !== '') out = out.replaceAll(value, reference);
  }
  return out;
}

/** Validates an already parsed document; every problem is reported with the path of its key. */
export function parseConfig(
  document: unknown,
  env: Readonly<Record<string, string | undefined>>,
  readFile: (file: string) => string = readSecretFile,
): Config {
  const problems: InterpolationProblem[] = [];
  const fileProblems: FileReferenceProblem[] = [];
  const marked = markFileReferences(document ?? {}, randomBytes(8).toString('hex'));
  const interpolated = resolveFileReferences(
    interpolateEnv(marked.document, env, problems),
    marked,
    readFile,
    fileProblems,
  );
  const lines = problems.map(
    (problem) => `${formatPath(problem.path)}: environment variable ${problem.variable} is not set`,
  );
  for (const problem of fileProblems)
    lines.push(`${formatPath(problem.path)}: secret file ${problem.file} ${problem.reason}`);
  lines.push(...forwardProblems(document));
  lines.push(...literalSecretProblems(document));
  const result = configSchema.safeParse(withoutForward(interpolated));
  const bound = result.success ? connectionBoundProblem(result.data) : null;
  if (bound) lines.push(bound);
  if (!result.success) {
    const shown = asWritten(interpolated, document);
    for (const issue of result.error.issues) {
      const line = describeIssue(issue, interpolated, shown);
      // An unset variable already explains the empty string it left behind.
      const explained = [...problems, ...fileProblems].some((problem) =>
        line.startsWith(`${formatPath(problem.path)}:`),
      );
      if (!explained) lines.push(line);
    }
  }
  if (lines.length > 0 || !result.success) {
    const strings = interpolatedStrings(document, interpolated, env);
    const shown = lines.map((line) => withoutInterpolatedValues(line, strings));
    throw new HookgateError('config_invalid', `The configuration is not valid:\n  ${shown.join('\n  ')}`);
  }
  noteDestinationSecrets(document, result.data.endpoints, env, readFile);
  return result.data;
}

/** Why a file could not be read, in words: `no such file`, `permission denied`, … */
function unreadableBecause(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  const reasons: Record<string, string> = {
    ENOENT: 'no such file',
    EACCES: 'permission denied',
    EPERM: 'permission denied',
    EISDIR: 'it is a directory, not a file',
    ENOTDIR: 'a part of the path is not a directory',
    ELOOP: 'too many symbolic links',
  };
  if (typeof code === 'string') return reasons[code] ? `${reasons[code]} (${code})` : code;
  return error instanceof Error ? error.message : String(error);
}

/** The configuration file as parsed YAML, before any reference is resolved or anything checked. */
export function readConfigDocument(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new HookgateError(
      'config_unreadable',
      `Cannot read the configuration file ${file}: ${unreadableBecause(error)} (working directory ${process.cwd()}; --config or HOOKGATE_CONFIG names another file).`,
      { cause: error },
    );
  }
  const document = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (document.errors.length > 0) {
    const details = document.errors.map((error) => error.message).join('\n  ');
    throw new HookgateError('config_invalid', `${file} is not valid YAML:\n  ${details}`);
  }
  return document.toJS();
}

export function loadConfig(
  file: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Config {
  const document = readConfigDocument(file);
  try {
    return parseConfig(document, env);
  } catch (error) {
    if (error instanceof HookgateError) {
      throw new HookgateError(error.code, error.message.replace('The configuration', file));
    }
    throw error;
  }
}
