// Every migration after the baseline is expand-then-contract (docs/releases.md): the checks that
// can be made on its text (release/migration-rules.ts), on this tree's migrations and on examples
// of each way to break the rule.
import { describe, expect, it } from 'vitest';
import { contractStatements, migrationProblems } from '../../release/migration-rules.ts';
import { readReleases } from '../../release/releases.ts';
import { type Migration, readMigrations } from '../../services/core/db/migration-files.ts';
import { ROOT } from '../support/process.ts';

const baseline = readMigrations().find((m) => m.version === 1)!;
const RELEASED = [{ version: '0.1.0', commit: 'a'.repeat(40), date: '2026-12-04', lastMigration: 1 }];

function migration(version: number, name: string, sql: string): Migration {
  return { version, name, sql, compatibleFrom: null };
}

describe("this tree's migrations", () => {
  it('keep the rule', () => {
    expect(migrationProblems(readMigrations(), readReleases(ROOT))).toEqual([]);
  });
});

describe('the rule, on examples', () => {
  it('lets expand steps through: new tables, nullable or defaulted columns, indexes, functions, backfills', () => {
    const expand = migration(
      31,
      'expand',
      `CREATE TABLE hookgate.widgets (id bigint PRIMARY KEY, name text NOT NULL);
       CREATE UNIQUE INDEX widgets_name_key ON hookgate.widgets (name);
       ALTER TABLE hookgate.widgets ADD CONSTRAINT widgets_name_check CHECK (length(name) < 100);
       ALTER TABLE hookgate.inbox ADD COLUMN note text;
       ALTER TABLE hookgate.inbox ADD COLUMN tries integer NOT NULL DEFAULT 0;
       ALTER TABLE hookgate.inbox ALTER COLUMN last_error DROP NOT NULL;
       CREATE INDEX inbox_note_idx ON hookgate.inbox (note);
       UPDATE hookgate.inbox SET note = '' WHERE note IS NULL;`,
    );
    expect(contractStatements(expand.sql)).toEqual([]);
    expect(migrationProblems([baseline, expand], [])).toEqual([]);
  });

  it('names each contract statement of a migration without a contract header', () => {
    const contract = migration(
      31,
      'contract',
      `ALTER TABLE hookgate.inbox DROP COLUMN traceparent;
       ALTER TABLE hookgate.inbox RENAME COLUMN headers TO kept_headers;
       ALTER TABLE hookgate.inbox ALTER COLUMN attempts TYPE bigint;
       ALTER TABLE hookgate.inbox ALTER COLUMN provider SET NOT NULL;
       ALTER TABLE hookgate.inbox ADD CONSTRAINT inbox_x_check CHECK (attempts < 99) NOT VALID;
       ALTER TABLE hookgate.inbox ADD COLUMN tenant text NOT NULL;
       CREATE UNIQUE INDEX audit_actor_key ON hookgate.audit (actor);
       DROP INDEX hookgate.inbox_entity_idx;
       REVOKE SELECT ON hookgate.audit FROM hookgate_readonly;
       DELETE FROM hookgate.audit;
       TRUNCATE hookgate.delivery_counts;`,
    );
    expect(contractStatements(contract.sql).map((line) => line.split(':')[0])).toEqual([
      'DROP',
      'RENAME',
      "a column's type changed",
      'SET NOT NULL',
      'a new constraint',
      'a NOT NULL column without a default',
      'a unique index',
      'DROP',
      'REVOKE',
      'DELETE',
      'TRUNCATE',
    ]);
    const problems = migrationProblems([baseline, contract], RELEASED);
    expect(problems).toHaveLength(1);
    // Before the first release it ships in that release: no earlier release to keep working.
    expect(migrationProblems([baseline, contract], [])).toEqual([]);
    // Once released, it is history: the release it shipped in already had it.
    expect(migrationProblems([baseline, contract], [{ ...RELEASED[0]!, lastMigration: 31 }])).toEqual([]);
    expect(problems[0]).toMatch(
      /^0031_contract removes or narrows what the previous release may use, with no "-- hookgate: contract, unused since X\.Y\.Z" header/,
    );
  });

  it('takes a contract step that names a release that is out, from a later release', () => {
    const drop = migration(
      32,
      'drop_traceparent',
      '-- hookgate: contract, unused since 0.1.0\nALTER TABLE hookgate.inbox DROP COLUMN traceparent;\n',
    );
    expect(migrationProblems([baseline, drop], RELEASED)).toEqual([]);
    // Not a release (yet): nothing may stop using it before it is out.
    expect(migrationProblems([baseline, drop], [])).toEqual([
      expect.stringMatching(
        /^0032_drop_traceparent is a contract step for what 0\.1\.0 stopped using, but 0\.1\.0 is not a release/,
      ),
    ]);
    // Part of that very release: its code may still use what the step removes.
    expect(migrationProblems([baseline, drop], [{ ...RELEASED[0]!, lastMigration: 32 }])).toEqual([
      expect.stringMatching(/^0032_drop_traceparent was part of 0\.1\.0 itself/),
    ]);
  });

  it('wants every statement of a no-transaction migration safe to run again, and one migration per number', () => {
    const index = migration(
      33,
      'index',
      '-- hookgate: no transaction\nCREATE INDEX CONCURRENTLY IF NOT EXISTS audit_actor_idx ON hookgate.audit (actor);\nCREATE INDEX CONCURRENTLY audit_command_idx ON hookgate.audit (command);\n',
    );
    const twin = migration(33, 'twin', 'CREATE TABLE hookgate.twin (id int);');
    expect(migrationProblems([baseline, index, twin], [])).toEqual([
      '0033_twin and 0033_index share the number 33: renumber one',
      expect.stringMatching(
        /^0033_index runs outside a transaction, so each statement must be safe to run again.*audit_command_idx/,
      ),
    ]);
  });
});
