// The compatibility rule's mechanical part (docs/releases.md, "The rule"): every migration after a
// release is expand-then-contract against that release. A statement that removes or narrows what
// exists (a contract step) is allowed in a migration newer than the newest release only when its
// header names a release that is out (release/releases) and that the migration came after; a
// no-transaction migration's statements can run again. Before the first release, every migration
// ships in it and has no release to keep working: only the header, numbering and no-transaction
// rules apply. Run by test/unit/migration-rules.test.ts and by `make release`.
import { type Migration, migrationName } from '../services/core/db/migration-files.ts';
import type { Release } from './releases.ts';

/** The baseline: 0.1.0's whole schema, created at once. */
export const BASELINE_VERSION = 1;

/** Statements that remove or narrow what the previous release may use. */
const CONTRACT_STATEMENTS: readonly { readonly what: string; readonly pattern: RegExp }[] = [
  { what: 'DROP', pattern: /\bDROP\b(?!\s+NOT\s+NULL\b)/i },
  { what: 'RENAME', pattern: /\bRENAME\b/i },
  { what: "a column's type changed", pattern: /\bALTER\s+(?:COLUMN\s+)?\w+\s+(?:SET\s+DATA\s+)?TYPE\b/i },
  { what: 'SET NOT NULL', pattern: /\bSET\s+NOT\s+NULL\b/i },
  { what: 'a new constraint', pattern: /\bADD\s+(?:CONSTRAINT|CHECK|UNIQUE|PRIMARY\s+KEY|FOREIGN\s+KEY|EXCLUDE)\b/i },
  {
    what: 'a NOT NULL column without a default',
    pattern: /\bADD\s+(?:COLUMN\s+)?(?:IF\s+NOT\s+EXISTS\s+)?\w+\s+(?:(?!\bDEFAULT\b)[^,;])*\bNOT\s+NULL\b(?:(?!\bDEFAULT\b)[^,;])*(?:,|;|$)/i,
  },
  { what: 'a unique index', pattern: /\bCREATE\s+UNIQUE\s+INDEX\b/i },
  { what: 'REVOKE', pattern: /\bREVOKE\b/i },
  { what: 'TRUNCATE', pattern: /\bTRUNCATE\b/i },
  { what: 'DELETE', pattern: /\bDELETE\s+FROM\b/i },
];
const CONTRACT_HEADER = /^-- hookgate: contract, unused since (\S+)/m;
const NO_TRANSACTION = /^-- hookgate: no transaction\b/;
const CREATED_TABLE = /\bCREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?([\w.]+)/gi;
const TARGET_TABLE = /\b(?:ALTER\s+TABLE\s+(?:IF\s+EXISTS\s+)?(?:ONLY\s+)?|\bON\s+(?:ONLY\s+)?)([\w.]+)/i;

/** A migration's statements, comment lines dropped, split at `;` ending a line. */
function statements(sql: string): string[] {
  return sql
    .split('\n')
    .filter((line) => !line.trim().startsWith('--'))
    .join('\n')
    .split(/;\s*(?:\n|$)/)
    .map((statement) => statement.replace(/\s+/g, ' ').trim())
    .filter((statement) => statement.length > 0);
}

/** Each contract statement of a migration, as "what: statement"; tables it creates itself are its own to change. */
export function contractStatements(sql: string): string[] {
  const created = new Set([...sql.matchAll(CREATED_TABLE)].map((match) => match[1]!.toLowerCase()));
  return statements(sql).flatMap((statement) => {
    const target = TARGET_TABLE.exec(statement)?.[1]?.toLowerCase();
    if (target !== undefined && created.has(target)) return [];
    return CONTRACT_STATEMENTS.filter(({ pattern }) => pattern.test(statement)).map(
      ({ what }) => `${what}: ${statement.length > 120 ? `${statement.slice(0, 117)}...` : statement}`,
    );
  });
}

/** Every way the migrations break the rule, as sentences (empty: none). */
export function migrationProblems(migrations: readonly Migration[], releases: readonly Release[]): string[] {
  const problems: string[] = [];
  const seen = new Map<number, string>();
  for (const migration of migrations) {
    const name = migrationName(migration);
    const twin = seen.get(migration.version);
    if (twin) problems.push(`${name} and ${twin} share the number ${migration.version}: renumber one`);
    seen.set(migration.version, name);
  }
  const baseline = migrations.find((m) => m.version === BASELINE_VERSION);
  if (baseline?.name !== 'baseline') problems.push('migrations/0001_baseline.sql is missing');
  // What the newest release already had: released, checked when it was new, never edited since.
  const released = releases.length === 0 ? null : Math.max(...releases.map((r) => r.lastMigration));
  for (const migration of migrations.filter((m) => m.version > BASELINE_VERSION)) {
    const name = migrationName(migration);
    const contract = contractStatements(migration.sql);
    const since = CONTRACT_HEADER.exec(migration.sql)?.[1];
    if (since !== undefined) {
      const release = releases.find((r) => r.version === since);
      if (!release)
        problems.push(
          `${name} is a contract step for what ${since} stopped using, but ${since} is not a release (release/releases): contract only what a release that is out no longer uses`,
        );
      else if (migration.version <= release.lastMigration)
        problems.push(
          `${name} was part of ${since} itself (its newest migration was ${String(release.lastMigration).padStart(4, '0')}): a contract step comes in a later release than the one that stopped using what it removes`,
        );
    } else if (contract.length > 0 && released !== null && migration.version > released) {
      problems.push(
        `${name} removes or narrows what the previous release may use, with no "-- hookgate: contract, unused since X.Y.Z" header naming the release that stopped using it (docs/releases.md):\n    ${contract.join('\n    ')}`,
      );
    }
    if (NO_TRANSACTION.test(migration.sql)) {
      for (const statement of statements(migration.sql)) {
        if (!/\bIF\s+(?:NOT\s+)?EXISTS\b/i.test(statement))
          problems.push(`${name} runs outside a transaction, so each statement must be safe to run again (IF [NOT] EXISTS): ${statement}`);
      }
    }
  }
  return problems;
}
