import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import type { z } from 'zod';
import { HookgateError } from '../errors.ts';
import { formatDuration, formatSize, isDurationText, isSizeText } from './duration.ts';
import { forwardProblems, withoutForward } from './forward-refused.ts';
import {
  type FileReferenceProblem,
  type InterpolationProblem,
  interpolateEnv,
  markFileReferences,
  resolveFileReferences,
} from './interpolate.ts';
import { type Config, configSchema } from './schema.ts';
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

function describeIssue(issue: z.core.$ZodIssue, document: unknown): string {
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
    const input = valueAt(document, issue.path);
    const given = typeof input === 'string' ? input : undefined;
    const meant = given === undefined ? undefined : closest(given, values);
    const named = given === undefined ? '' : ` "${given}"${meant ? ` (did you mean "${meant}"?)` : ''}`;
    return `${path}: unknown provider${named}; use one of ${values.join(', ')}`;
  }
  return `${path}: ${issue.message}`;
}

const readSecretFile = (file: string): string => readFileSync(file, 'utf8');

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
  const result = configSchema.safeParse(withoutForward(interpolated));
  if (!result.success) {
    for (const issue of result.error.issues) {
      const line = describeIssue(issue, interpolated);
      // An unset variable already explains the empty string it left behind.
      const explained = [...problems, ...fileProblems].some((problem) =>
        line.startsWith(`${formatPath(problem.path)}:`),
      );
      if (!explained) lines.push(line);
    }
  }
  if (lines.length > 0 || !result.success) {
    throw new HookgateError('config_invalid', `The configuration is not valid:\n  ${lines.join('\n  ')}`);
  }
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

export function loadConfig(
  file: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Config {
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
  try {
    return parseConfig(document.toJS(), env);
  } catch (error) {
    if (error instanceof HookgateError) {
      throw new HookgateError(error.code, error.message.replace('The configuration', file));
    }
    throw error;
  }
}
