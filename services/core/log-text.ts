// LOG_FORMAT=text: pino's JSON line turned into one line a person reads on a terminal
// (`14:02:11.250 INFO  console at http://127.0.0.1:8081/ endpoint=demo`), as pino-pretty does,
// without a dependency in the image. JSON stays the default: what log pipelines parse.

const LEVELS: Readonly<Record<string, string>> = {
  trace: 'TRACE',
  debug: 'DEBUG',
  info: 'INFO ',
  warn: 'WARN ',
  error: 'ERROR',
  fatal: 'FATAL',
};

const LEFT_OUT = new Set(['level', 'time', 'msg', 'service', 'err']);

function value(item: unknown): string {
  if (typeof item === 'string') return /^[^\s"=]+$/.test(item) ? item : JSON.stringify(item);
  return JSON.stringify(item) ?? String(item);
}

/** One JSON log line (with its trailing newline) as text; a line that is not JSON passes as is. */
export function textLine(json: string): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const time = typeof record.time === 'string' ? record.time.slice(11, 23) : '';
  const level = LEVELS[String(record.level)] ?? String(record.level).toUpperCase();
  const fields = Object.entries(record)
    .filter(([key]) => !LEFT_OUT.has(key))
    .map(([key, item]) => `${key}=${value(item)}`);
  const err = record.err as { type?: string; code?: string; message?: string; stack?: string } | undefined;
  const failure = err
    ? ` err=${value(`${err.code ? `${err.code}: ` : ''}${err.message ?? err.type ?? ''}`)}${
        err.stack
          ? err.stack
              .split('\n')
              .slice(1)
              .map((frame) => `\n    ${frame.trim()}`)
              .join('')
          : ''
      }`
    : '';
  return `${time} ${level} ${String(record.msg ?? '')}${fields.length > 0 ? ` ${fields.join(' ')}` : ''}${failure}\n`;
}
