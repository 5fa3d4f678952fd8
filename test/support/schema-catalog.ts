import type pg from 'pg';

/**
 * hookgate's schema as lines of text read from the catalogs (no pg_dump of the server's own major
 * ships with the embedded PostgreSQL): every relation of the schemas hookgate, billing and pgboss
 * with its columns, constraints, indexes, triggers, partition bounds and grants, and every
 * function with its definition and grants. Dated partition names and bounds are normalised
 * (inbox_pYYYYMMDD → inbox_p*), so two databases migrated on different days compare equal.
 */
const DESCRIBE = `
  WITH rel AS (
    SELECT c.oid, n.nspname, c.relname, c.relkind, c.relacl, c.relispartition
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname IN ('hookgate', 'billing', 'pgboss') AND c.relkind IN ('r', 'p', 'v', 'S', 'm')
  )
  SELECT 'relation ' || rel.nspname || '.' || rel.relname || ' kind=' || rel.relkind::text
         || coalesce(' bound=' || pg_get_expr(c.relpartbound, c.oid), '')
         || coalesce(' partitioned=' || pg_get_partkeydef(c.oid), '')
         || coalesce(' acl=' || (SELECT string_agg(a::text, ',' ORDER BY a::text) FROM unnest(rel.relacl) a), '') AS line
    FROM rel JOIN pg_class c ON c.oid = rel.oid
  UNION ALL
  SELECT 'column ' || nspname || '.' || relname || ' #' || a.attnum || ' ' || a.attname || ' '
         || format_type(a.atttypid, a.atttypmod) || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
         || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '')
         || CASE WHEN a.attidentity <> '' THEN ' identity ' || a.attidentity::text ELSE '' END
         || coalesce(' acl=' || (SELECT string_agg(x::text, ',' ORDER BY x::text) FROM unnest(a.attacl) x), '')
    FROM rel JOIN pg_attribute a ON a.attrelid = rel.oid AND a.attnum > 0 AND NOT a.attisdropped
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
   WHERE rel.relkind IN ('r', 'p', 'v', 'm')
  UNION ALL
  SELECT 'constraint ' || nspname || '.' || relname || ' ' || k.conname || ' ' || k.contype::text || ' '
         || pg_get_constraintdef(k.oid) || CASE WHEN k.convalidated THEN '' ELSE ' not valid' END
    FROM rel JOIN pg_constraint k ON k.conrelid = rel.oid
  UNION ALL
  SELECT 'index ' || pg_get_indexdef(i.indexrelid) || CASE WHEN i.indisvalid THEN '' ELSE ' INVALID' END
    FROM rel JOIN pg_index i ON i.indrelid = rel.oid
  UNION ALL
  SELECT 'trigger ' || pg_get_triggerdef(t.oid)
    FROM rel JOIN pg_trigger t ON t.tgrelid = rel.oid AND NOT t.tgisinternal
  UNION ALL
  SELECT 'function ' || n.nspname || '.' || p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')'
         || coalesce(' acl=' || (SELECT string_agg(x::text, ',' ORDER BY x::text) FROM unnest(p.proacl) x), '')
         || E'\\n' || pg_get_functiondef(p.oid)
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
   WHERE n.nspname IN ('hookgate', 'billing', 'pgboss')
  UNION ALL
  SELECT 'schema ' || nspname
         || coalesce(' acl=' || (SELECT string_agg(x::text, ',' ORDER BY x::text) FROM unnest(nspacl) x), '')
    FROM pg_namespace WHERE nspname IN ('hookgate', 'billing', 'pgboss')`;

export async function describeSchema(db: Pick<pg.Pool | pg.Client, 'query'>): Promise<string[]> {
  const { rows } = await db.query<{ line: string }>(DESCRIBE);
  return rows
    .map((row) =>
      row.line
        .replace(/inbox_p\d{8}/g, 'inbox_p*')
        .replace(/'\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\+00'/g, "'<time>'"),
    )
    .sort();
}
