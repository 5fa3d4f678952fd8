import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import { HookgateError } from '../../core/errors.ts';

/** What verify needs of each acknowledged delivery; anything else it reads from the inbox. */
const recordSchema = z.looseObject({
  endpoint: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, 'is not an endpoint name'),
  event_id: z.string().min(1).max(512),
});

export interface SentEvent {
  readonly endpoint: string;
  readonly eventId: string;
  /** Acknowledged deliveries of this event (more than 1: duplicates). */
  deliveries: number;
}

export interface SentFile {
  readonly events: ReadonlyMap<string, SentEvent>;
  readonly deliveries: number;
  /** Console lines that are not records (a k6 script's own warnings, say). */
  readonly otherLines: number;
}

const keyOf = (endpoint: string, eventId: string) => `${endpoint}\u0000${eventId}`;

/** k6's text log format: `time="…" level=info msg="<Go-quoted string>" source=console`. */
const TEXT_MESSAGE = /(?:^|\s)msg="((?:[^"\\]|\\.)*)"/;

type Parsed = { record: z.output<typeof recordSchema> } | { other: true } | { invalid: string };

function asRecord(value: unknown): Parsed {
  if (typeof value !== 'object' || value === null || !('event_id' in value || 'endpoint' in value)) {
    return { other: true };
  }
  const parsed = recordSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { invalid: `${issue.path.join('.') || 'record'} ${issue.message}` };
  }
  return { record: parsed.data };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * A line is a record (`{"endpoint":…,"event_id":…}`, as the Node driver writes), or a k6
 * console line wrapping one: `--log-format json` gives `{"msg":"<record>",…}`, the default
 * text format gives `msg="<record>"`. Other k6 console lines are counted and skipped.
 */
export function parseLine(line: string): Parsed {
  if (line.startsWith('{')) {
    const value = parseJson(line);
    if (value === undefined) return { invalid: 'is not valid JSON' };
    if (typeof value === 'object' && value !== null && 'msg' in value && typeof value.msg === 'string') {
      const inner = parseJson(value.msg);
      return inner === undefined ? { other: true } : asRecord(inner);
    }
    const parsed = asRecord(value);
    return 'other' in parsed ? { invalid: 'has no endpoint and event_id' } : parsed;
  }
  const match = TEXT_MESSAGE.exec(line);
  if (match) {
    // Go's %q quoting of a JSON record is a valid JSON string literal.
    const message = parseJson(`"${match[1]}"`);
    const inner = typeof message === 'string' ? parseJson(message) : undefined;
    return inner === undefined ? { other: true } : asRecord(inner);
  }
  return { invalid: 'is neither a JSON record nor a k6 console line' };
}

export async function readSentFile(file: string): Promise<SentFile> {
  const events = new Map<string, SentEvent>();
  let deliveries = 0;
  let otherLines = 0;
  let lineNumber = 0;
  const stream = createReadStream(file, { encoding: 'utf8' });
  const opened = new Promise<void>((resolve, reject) => {
    stream.once('open', () => resolve());
    stream.once('error', reject);
  });
  try {
    await opened;
  } catch (error) {
    throw new HookgateError('sent_file_unreadable', `Cannot read the sent file ${file}.`, { cause: error });
  }
  for await (const raw of createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY })) {
    lineNumber += 1;
    const line = raw.trim();
    if (line === '') continue;
    const parsed = parseLine(line);
    if ('invalid' in parsed) {
      throw new HookgateError('sent_file_invalid', `${file} line ${lineNumber} ${parsed.invalid}.`);
    }
    if ('other' in parsed) {
      otherLines += 1;
      continue;
    }
    deliveries += 1;
    const key = keyOf(parsed.record.endpoint, parsed.record.event_id);
    const known = events.get(key);
    if (known) known.deliveries += 1;
    else
      events.set(key, { endpoint: parsed.record.endpoint, eventId: parsed.record.event_id, deliveries: 1 });
  }
  if (deliveries === 0) {
    throw new HookgateError(
      'sent_file_empty',
      `${file} records no acknowledged delivery (${otherLines} other lines): nothing to verify.`,
    );
  }
  return { events, deliveries, otherLines };
}
