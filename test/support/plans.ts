import { createRequire } from 'node:module';
import type pg from 'pg';
import type { SentStatement } from './statement-recorder.ts';

// node-postgres's own conversion of a JS value into the text it binds (arrays, dates, buffers,
// objects), so a recorded statement is explained with exactly the values it was sent with.
const { prepareValue } = createRequire(import.meta.url)('pg/lib/utils.js') as {
  prepareValue(value: unknown): string | Buffer | null;
};

/** hookgate's tables the audit watches (pg-boss's job tables besides). */
export const WATCHED_HOOKGATE = [
  'inbox',
  'delivery_counts',
  'destination_deliveries',
  'destination_attempts',
  'destination_state',
  'destination_rate',
  'destination_breaker',
  'audit',
  'apply_attempts',
  'endpoint_state',
  'quarantine',
  'reconcile_state',
  // The API's Idempotency-Keys (as many as a day of actions); its tokens' last use is one row per
  // configured token (console.tokens: at most 1000), deleted by name at a console's start.
  'api_idempotency',
] as const;

/** The inbox's partitions (migration 0021): plans name them, not hookgate.inbox. */
const INBOX_PARTITION = /^inbox_(p\d{8}|default|unpartitioned)$/;

/**
 * The tables whose size grows with traffic: a plan that reads one of them from end to end costs
 * more with every event stored, so no statement on a hot path may. pg-boss's job table is
 * partitioned by queue (`job_common` and one `j…` table per partitioned queue).
 */
export function isWatched(schema: string, relation: string): boolean {
  if (schema === 'hookgate')
    return (WATCHED_HOOKGATE as readonly string[]).includes(relation) || INBOX_PARTITION.test(relation);
  if (schema === 'pgboss')
    return relation === 'job' || relation === 'job_common' || /^j[0-9a-f]{56}$/.test(relation);
  return false;
}

const WATCHED_TEXT = new RegExp(
  `\\b(hookgate\\.(${WATCHED_HOOKGATE.join('|')})|pgboss\\.(job|job_common|j[0-9a-f]{56}))\\b`,
);

/** Splits a simple-query text into its statements (semicolons outside quotes and comments). */
export function splitStatements(text: string): string[] {
  const parts: string[] = [];
  let current = '';
  let i = 0;
  while (i < text.length) {
    const rest = text.slice(i);
    const dollar = /^\$([A-Za-z_]*)\$/.exec(rest);
    if (rest.startsWith("'")) {
      const end = /^'(?:[^']|'')*'/.exec(rest)?.[0] ?? rest;
      current += end;
      i += end.length;
    } else if (rest.startsWith('"')) {
      const end = /^"(?:[^"]|"")*"/.exec(rest)?.[0] ?? rest;
      current += end;
      i += end.length;
    } else if (rest.startsWith('--')) {
      const end = rest.indexOf('\n');
      i += end === -1 ? rest.length : end;
    } else if (dollar) {
      const tag = dollar[0];
      const close = rest.indexOf(tag, tag.length);
      const end = close === -1 ? rest.length : close + tag.length;
      current += rest.slice(0, end);
      i += end;
    } else if (rest.startsWith(';')) {
      parts.push(current);
      current = '';
      i += 1;
    } else {
      current += text[i];
      i += 1;
    }
  }
  parts.push(current);
  return parts.map((part) => part.trim()).filter((part) => part.length > 0);
}

/** Statements that plan a read or a write of table rows (not BEGIN, SET, LISTEN, NOTIFY, …). */
export function isPlannable(text: string): boolean {
  return /^\s*(\(\s*)*(select|with|insert|update|delete|merge)\b/i.test(text);
}

/** One statement to audit: a text whose plan can read a watched table, with values it was sent with. */
export interface AuditTarget {
  readonly text: string;
  readonly values: readonly unknown[];
  /** Prepared by name in the code (kept for the connection's life), not sent unnamed. */
  readonly named: boolean;
}

/** The distinct statements among those sent that can read a watched table. */
export function auditTargets(sent: readonly SentStatement[]): AuditTarget[] {
  const byText = new Map<string, AuditTarget>();
  for (const statement of sent) {
    const texts = statement.values.length > 0 ? [statement.text] : splitStatements(statement.text);
    for (const text of texts) {
      if (!isPlannable(text) || !WATCHED_TEXT.test(text)) continue;
      const known = byText.get(text);
      if (known && (known.named || statement.name === null)) continue;
      byText.set(text, {
        text,
        values: statement.values,
        named: statement.name !== null || known?.named === true,
      });
    }
  }
  return [...byText.values()];
}

export function literal(client: pg.ClientBase, value: unknown): string {
  const prepared = prepareValue(value);
  if (prepared === null || prepared === undefined) return 'NULL';
  if (Buffer.isBuffer(prepared)) return `'\\x${prepared.toString('hex')}'`;
  return client.escapeLiteral(String(prepared));
}

/** The watched tables a plan (EXPLAIN VERBOSE text: relations schema-qualified) reads end to end. */
export function seqScansIn(plan: string): string[] {
  const found: string[] = [];
  for (const match of plan.matchAll(/Seq Scan on (\w+)\.(\w+)/g)) {
    if (isWatched(match[1]!, match[2]!)) found.push(`${match[1]}.${match[2]}`);
  }
  return found;
}

export type PlanMode = 'auto' | 'force_generic_plan' | 'force_custom_plan';

/** A statement prepared under a name of the audit's own, on one connection. */
export class PreparedTarget {
  readonly target: AuditTarget;
  readonly name: string;
  private readonly client: pg.ClientBase;

  constructor(client: pg.ClientBase, target: AuditTarget, name: string) {
    this.client = client;
    this.target = target;
    this.name = name;
  }

  /** PREPAREs it (parameter types inferred from the text, as for a protocol-level prepare). */
  async prepare(): Promise<void> {
    await this.client.query(`PREPARE ${this.name} AS ${this.target.text}`);
  }

  /**
   * An inbox partition with no rows yet (the weeks made ahead) is read end to end by any plan
   * made now, at no cost; its statements are planned again once it fills and is analysed (only
   * the claim is a named, cached statement, and it reads no table). Partitions with rows count.
   */
  private async withoutEmptyPartitions(scans: string[]): Promise<string[]> {
    const kept: string[] = [];
    for (const scan of scans) {
      const [schema, relation] = scan.split('.') as [string, string];
      if (schema === 'hookgate' && INBOX_PARTITION.test(relation)) {
        const { rows } = await this.client.query<{ any: boolean }>(
          `SELECT EXISTS (SELECT 1 FROM hookgate.${relation}) AS any`,
        );
        if (!rows[0]?.any) continue;
      }
      kept.push(scan);
    }
    return kept;
  }

  /** The plan EXECUTE would run now under `mode` (EXPLAIN without ANALYZE: nothing runs). */
  async explain(mode: PlanMode): Promise<{ text: string; scans: string[] }> {
    const args = this.target.values.map((value) => literal(this.client, value));
    const execute = `EXECUTE ${this.name}${args.length > 0 ? `(${args.join(', ')})` : ''}`;
    await this.client.query(`SET plan_cache_mode = ${mode}`);
    try {
      const result = await this.client.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN (VERBOSE, COSTS OFF) ${execute}`,
      );
      const text = result.rows.map((row) => row['QUERY PLAN']).join('\n');
      return { text, scans: await this.withoutEmptyPartitions(seqScansIn(text)) };
    } finally {
      await this.client.query('RESET plan_cache_mode');
    }
  }
}

const PARTITION_INDEXES = `
  SELECT child.relname AS child, parent.relname AS parent
    FROM pg_inherits i
    JOIN pg_class child ON child.oid = i.inhrelid AND child.relkind = 'i'
    JOIN pg_class parent ON parent.oid = i.inhparent
   WHERE parent.relnamespace = 'hookgate'::regnamespace`;

/**
 * A plan's text with each partition's index named as the parent's index it belongs to
 * (`inbox_p20261203_endpoint_received_at_idx` → `inbox_pending_idx`), so a test can say which
 * index a statement must use whichever partitions exist.
 */
export async function withParentIndexNames(client: pg.ClientBase, plan: string): Promise<string> {
  const { rows } = await client.query<{ child: string; parent: string }>(PARTITION_INDEXES);
  let text = plan;
  // Longest first: one partition's index name may begin with another's.
  for (const { child, parent } of rows.sort((a, b) => b.child.length - a.child.length))
    text = text.replaceAll(new RegExp(`\\b${child}\\b`, 'g'), parent);
  return text;
}
