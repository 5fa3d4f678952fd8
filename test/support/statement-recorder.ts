import pg from 'pg';

/** A statement as a client sent it: its text, its bound values, and its name if prepared by name. */
export interface SentStatement {
  readonly text: string;
  readonly values: readonly unknown[];
  readonly name: string | null;
}

/**
 * Records every statement any node-postgres client of this process sends (hookgate's pools and
 * pg-boss's alike: both use this `pg`), while the statements still run for real. The plan audit
 * replays them under EXPLAIN; nothing is answered in their place.
 */
export function recordStatements(): { readonly sent: SentStatement[]; stop(): void } {
  const sent: SentStatement[] = [];
  const prototype = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = prototype.query;
  prototype.query = function recorded(this: unknown, ...args: unknown[]) {
    const [first, second] = args;
    if (typeof first === 'string') {
      sent.push({ text: first, values: Array.isArray(second) ? second : [], name: null });
    } else if (first && typeof first === 'object' && typeof (first as { text?: unknown }).text === 'string') {
      const config = first as { text: string; values?: unknown; name?: unknown };
      const values = Array.isArray(config.values) ? config.values : Array.isArray(second) ? second : [];
      sent.push({ text: config.text, values, name: typeof config.name === 'string' ? config.name : null });
    }
    return original.apply(this, args);
  };
  return {
    sent,
    stop() {
      prototype.query = original;
    },
  };
}
