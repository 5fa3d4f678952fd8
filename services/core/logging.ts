import { pino } from 'pino';

export type Logger = pino.Logger;

/**
 * Structured JSON logs on stdout (`fd` 2 for one-shot commands, whose stdout is their result). Secrets and signature headers never reach a log line:
 * callers log identifiers and outcomes, and the redaction list is a second fence.
 *
 * Writes are asynchronous: while one write is in progress, further lines gather and go out
 * together, so under load there is not one write(2) per delivery, and at rest a line is
 * written at once. What is still buffered is flushed on exit.
 */
export function createLogger(level: string = process.env.LOG_LEVEL ?? 'info', fd: 1 | 2 = 1): Logger {
  const destination = pino.destination({ dest: fd, sync: false });
  const logger = pino(
    {
      level,
      base: { service: 'hookgate' },
      redact: {
        paths: ['secret', 'secrets', '*.secret', '*.secrets', 'headers.authorization', 'databaseUrl'],
        censor: '[redacted]',
      },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
  process.once('exit', () => destination.flushSync());
  return logger;
}
