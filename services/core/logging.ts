import { pino } from 'pino';
import { textLine } from './log-text.ts';
import { isUnreachable } from './unreachable.ts';

export type Logger = pino.Logger;

/**
 * pino's `isoTime`, formatted once per millisecond: a claim batch's answers are logged within
 * the same millisecond, and the line is byte for byte what `isoTime` writes.
 */
function cachedIsoTime(): () => string {
  let at = Number.NaN;
  let text = '';
  return () => {
    const now = Date.now();
    if (now !== at) {
      at = now;
      text = `,"time":"${new Date(now).toISOString()}"`;
    }
    return text;
  };
}

/** An error's own short message; an AggregateError (a refused dual-stack connect) has none. */
function messageOf(error: Error): string {
  if (error.message) return error.message;
  const inner = (error as { errors?: unknown }).errors;
  if (Array.isArray(inner)) return inner.map((e) => (e instanceof Error ? e.message : String(e))).join('; ');
  return '';
}

/**
 * `err` as it is logged: type, code, message (and PostgreSQL's detail), never the error's other
 * properties (a pg error can carry its whole client object). An error that carries a code (a
 * HookgateError, ECONNREFUSED, a SQLSTATE) or says the database cannot be reached is an expected
 * condition: a stack trace on every retry would only bury the lines that matter. Anything else is
 * a bug and keeps its stack and cause.
 */
export function serializeError(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const { code, detail } = error as { code?: unknown; detail?: unknown };
  const line: Record<string, unknown> = { type: error.name };
  if (typeof code === 'string' && code !== '') line.code = code;
  line.message = messageOf(error);
  if (typeof detail === 'string' && detail !== '') line.detail = detail;
  if (line.code !== undefined || isUnreachable(error)) return line;
  line.stack = error.stack;
  if (error.cause !== undefined) line.cause = serializeError(error.cause);
  return line;
}

/**
 * Structured JSON logs on stdout (`fd` 2 for one-shot commands, whose stdout is their result);
 * `LOG_FORMAT=text` writes each line for a person instead (log-text.ts; `make run` sets it). Secrets and signature headers never reach a log line:
 * callers log identifiers and outcomes, and the redaction list is a second fence.
 *
 * Writes are asynchronous and batched: lines gather until 8 KiB are buffered (about 40 lines)
 * or 250 ms have passed, then go out in one write(2). At saturation the gateway spent a fifth
 * of its CPU in one small write per few lines (docs/benchmarks.md); a line now waits at most
 * 250 ms. What is still buffered is flushed on exit; a SIGKILL loses at most those 250 ms of
 * lines (never a delivery: the inbox, not the log, is the record).
 */
export function createLogger(level: string = process.env.LOG_LEVEL ?? 'info', fd: 1 | 2 = 1): Logger {
  // Gathered as bytes: in its text mode sonic-boom measures the UTF-8 length of the text gathered
  // so far on every line, which flattens it (about 4 KiB copied per line at 8 KiB batches); in
  // buffer mode each line is encoded once and the batch is joined once per write.
  const destination = pino.destination({
    dest: fd,
    sync: false,
    minLength: 8192,
    periodicFlush: 250,
    contentMode: 'buffer',
  });
  // sonic-boom's typings describe only its text mode; in buffer mode `write` takes bytes.
  const bytes = destination as unknown as { write(data: Buffer): boolean };
  const text = process.env.LOG_FORMAT?.trim() === 'text';
  const lines: pino.DestinationStream & Pick<typeof destination, 'flush' | 'flushSync'> = {
    write: (line: string) => {
      bytes.write(Buffer.from(text ? textLine(line) : line, 'utf8'));
    },
    flush: (cb) => destination.flush(cb),
    flushSync: () => destination.flushSync(),
  };
  const logger = pino(
    {
      level,
      base: { service: 'hookgate' },
      redact: {
        paths: ['secret', 'secrets', '*.secret', '*.secrets', 'headers.authorization', 'databaseUrl'],
        censor: '[redacted]',
      },
      timestamp: cachedIsoTime(),
      // `"level":"info"`, not pino's 30: what log queries and people read.
      formatters: { level: (label) => ({ level: label }) },
      serializers: { err: serializeError },
    },
    lines,
  );
  process.once('exit', () => destination.flushSync());
  return logger;
}
