import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

// Each table's SQL lives in its owner modules (docs/architecture.md, "Where each table's SQL
// lives"): a file anywhere else under services/ that names one of these tables in code (comments
// are not code) fails here. A new statement goes into the owner, or the owner list changes here
// and in the code map together.

const ROOT = join(import.meta.dirname, '../..');

const BILLING = ['services/core/handlers/billing-sql.ts', 'services/core/read-models/'];

/** Table (as SQL spells it, schema-qualified) → the files and folders that may spell it. */
const OWNERS: Record<string, readonly string[]> = {
  'hookgate.inbox': [
    'services/core/inbox/',
    'services/core/read-models/',
    'services/console/read-models/',
    // The destination relay's claim reads the payload it sends with the rows it claims.
    'services/core/destinations/deliveries.ts',
    // The console role's column grants (hookgate_console).
    'services/core/db/roles.ts',
  ],
  // The partitioned inbox: its deduplication keys, its list of partitions and the
  // partitions named by hand; the functions in the migration make and drop the dated ones.
  // The claim's dedupe reads them too (a dry run's presence, reconciliation's known ids): a key
  // outlives its row by the dedupe horizon. Keys' retention and its floor are partitions.ts's.
  'hookgate.inbox_keys': [
    'services/core/inbox/partitions.ts',
    'services/core/inbox/presence.ts',
    'services/core/inbox/known.ts',
    'services/core/db/roles.ts',
  ],
  'hookgate.inbox_keys_floor': ['services/core/inbox/partitions.ts'],
  'hookgate.inbox_moves': ['services/core/db/roles.ts'],
  'hookgate.inbox_partitions': ['services/core/inbox/partitions.ts', 'services/core/db/roles.ts'],
  'hookgate.inbox_default': ['services/core/inbox/partitions.ts'],
  // `body: raw` destinations' original bytes, embedded by the claim and the relay's claim.
  'hookgate.inbox_raw': ['services/core/inbox/raw-bodies.ts', 'services/core/db/roles.ts'],
  'hookgate.delivery_counts': [
    'services/core/inbox/',
    'services/core/read-models/',
    'services/console/read-models/',
    'services/core/db/roles.ts',
  ],
  // Destinations: the claim and the statistics join their state tables.
  'hookgate.destination_deliveries': [
    'services/core/destinations/',
    'services/core/read-models/',
    'services/core/db/roles.ts',
  ],
  'hookgate.destination_attempts': ['services/core/destinations/', 'services/core/read-models/'],
  'hookgate.destination_state': ['services/core/destinations/', 'services/core/db/roles.ts'],
  'hookgate.destination_rate': ['services/core/destinations/'],
  'hookgate.destination_breaker': ['services/core/destinations/', 'services/core/read-models/'],
  'hookgate.entity_state': ['services/core/handlers/project.ts', 'services/core/read-models/'],
  'hookgate.schema_migrations': ['services/core/migrate/', 'services/core/db/roles.ts'],
  // Operations: the audit trail, paused endpoints, the per-attempt history.
  'hookgate.audit': ['services/core/audit/', 'services/core/db/roles.ts'],
  'hookgate.endpoint_state': ['services/core/pause/', 'services/core/db/roles.ts'],
  'hookgate.apply_attempts': ['services/core/attempts/'],
  'hookgate.reconcile_state': ['services/core/reconcile/state-sql.ts'],
  // The management API: Idempotency-Keys and their answers, tokens' last use.
  'hookgate.api_idempotency': ['services/core/api/idempotency.ts', 'services/core/db/roles.ts'],
  'hookgate.api_token_use': ['services/core/api/token-use.ts', 'services/core/db/roles.ts'],
  // Quarantine: verified deliveries that cannot become inbox events.
  'hookgate.quarantine': ['services/core/quarantine/', 'services/core/db/roles.ts'],
  // pg-boss's own tables: hookgate's statements on them live in one module (roles grant on them).
  'pgboss.': ['services/core/queue/job-rows.ts', 'services/core/db/roles.ts'],
  // The reference handler's tables; verify reads them to check a load run.
  'billing.invoices': BILLING,
  'billing.subscriptions': BILLING,
  'billing.ledger_entries': BILLING,
};

/** Files that name a table in words for people (a report), not in SQL. */
const MENTIONS: Record<string, readonly string[]> = {
  'billing.ledger_entries': ['services/cli/verify/render.ts'],
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The file's code without its comments (block comments, and line comments outside strings). */
function withoutComments(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
}

function spells(code: string, table: string): boolean {
  const escaped = table.replace(/\./g, '\\.');
  const pattern = table.endsWith('.') ? `\\b${escaped}[a-z_]+` : `\\b${escaped}\\b`;
  return new RegExp(pattern).test(code);
}

describe('table owners', () => {
  const files = sourceFiles(join(ROOT, 'services')).map((path) => ({
    path: relative(ROOT, path),
    code: withoutComments(readFileSync(path, 'utf8')),
  }));

  for (const [table, owners] of Object.entries(OWNERS)) {
    it(`only ${owners.join(', ')} spell ${table}`, () => {
      const outsiders = files
        .filter((file) => spells(file.code, table))
        .map((file) => file.path)
        .filter(
          (path) =>
            !owners.some((owner) => path === owner || (owner.endsWith('/') && path.startsWith(owner))),
        )
        .filter((path) => !(MENTIONS[table] ?? []).includes(path));
      expect(outsiders).toEqual([]);
    });
  }

  it('finds the owners themselves (the scan is not blind)', () => {
    const claim = files.find((file) => file.path === 'services/core/inbox/claim-sql.ts');
    expect(claim && spells(claim.code, 'hookgate.inbox')).toBe(true);
    const jobs = files.find((file) => file.path === 'services/core/queue/job-rows.ts');
    expect(jobs && spells(jobs.code, 'pgboss.')).toBe(true);
    expect(spells(withoutComments('// FROM hookgate.inbox\nconst a = 1;'), 'hookgate.inbox')).toBe(false);
    expect(
      spells(withoutComments("const url = 'http://x'; const q = 'FROM hookgate.inbox';"), 'hookgate.inbox'),
    ).toBe(true);
  });
});
