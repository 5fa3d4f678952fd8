import { pino } from 'pino';

export type Logger = pino.Logger;

/**
 * Structured JSON logs on stdout. Secrets and signature headers never reach a log line:
 * callers log identifiers and outcomes, and the redaction list is a second fence.
 */
export function createLogger(level: string = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({
    level,
    base: { service: 'hookgate' },
    redact: {
      paths: ['secret', 'secrets', '*.secret', '*.secrets', 'headers.authorization', 'databaseUrl'],
      censor: '[redacted]',
    },
    timestamp: pino.stdTimeFunctions.isoTime,
  });
}
