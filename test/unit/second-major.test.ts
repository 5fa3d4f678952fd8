import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { OWN_SERVER, SECOND_MAJOR } from '../support/second-major.ts';

// The second major's rule (test/support/second-major.ts, docs/architecture.md): an integration
// file whose code touches an area where PostgreSQL's major matters runs on PostgreSQL 15 too.
// Decided from the file's code (comments left out), not from its name.

/** Each area, and what in a test file's code says it touches it. */
const AREAS: Readonly<Record<string, readonly RegExp[]>> = {
  plans: [/\bEXPLAIN\b/, /support\/plans\.ts'/],
  migrations: [/core\/migrate\/migrate\.ts'/, /\['migrate'|'migrate',/],
  partitions: [
    /inbox\/partitions\.ts'/,
    /inbox\/partition-metrics\.ts'/,
    /inbox_(create|drop)_partition|hookgate\.inbox_partitions|inbox_p\d|inbox_default/,
  ],
  roles: [
    /\b(CREATE|ALTER|DROP) ROLE\b|\bSET (LOCAL )?ROLE\b|SET SESSION AUTHORIZATION/,
    /core\/db\/roles\.ts'/,
    /--create-roles/,
  ],
  PgBouncer: [/support\/pgbouncer\.ts'/],
  'the claim': [/core\/inbox\/(claim|claim-sql|group-commit)\.ts'/],
};

const withoutComments = (source: string) =>
  source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');

/** The areas a test file's code touches. */
function areasOf(source: string): string[] {
  const code = withoutComments(source);
  return Object.entries(AREAS)
    .filter(([, patterns]) => patterns.some((pattern) => pattern.test(code)))
    .map(([area]) => area);
}

const INTEGRATION = readdirSync('test/integration')
  .filter((name) => name.endsWith('.test.ts'))
  .map((name) => `test/integration/${name}`);

describe('the second major (PostgreSQL 15) runs every file where the major matters', () => {
  it('lists every integration file that touches plans, migrations, partitions, roles, PgBouncer or the claim', () => {
    const missing = INTEGRATION.filter((file) => !(file in SECOND_MAJOR) && !(file in OWN_SERVER))
      .map((file) => ({ file, areas: areasOf(readFileSync(file, 'utf8')) }))
      .filter(({ areas }) => areas.length > 0)
      .map(({ file, areas }) => `${file} (${areas.join(', ')})`);
    expect(missing, 'add them to test/support/second-major.ts').toEqual([]);
  });

  it('lists only files that exist, each with its reason', () => {
    for (const [file, reason] of Object.entries({ ...SECOND_MAJOR, ...OWN_SERVER })) {
      expect(INTEGRATION, file).toContain(file);
      expect(reason.length, file).toBeGreaterThan(3);
    }
  });

  it('finds each area in code and not in comments', () => {
    expect(areasOf(`const plan = await client.query('EXPLAIN SELECT 1');`)).toEqual(['plans']);
    expect(areasOf(`import { migrate } from '../../services/core/migrate/migrate.ts';`)).toEqual([
      'migrations',
    ]);
    expect(areasOf(`await runCli(['migrate', '--dry-run']);`)).toEqual(['migrations']);
    expect(areasOf(`await db.query('SELECT count(*) FROM hookgate.inbox_default');`)).toEqual(['partitions']);
    expect(areasOf(`await db.query('CREATE ROLE someone LOGIN');`)).toEqual(['roles']);
    expect(areasOf(`import { startPgBouncer } from '../support/pgbouncer.ts';`)).toEqual(['PgBouncer']);
    expect(areasOf(`import { claimBatch } from '../../services/core/inbox/claim.ts';`)).toEqual([
      'the claim',
    ]);
    expect(areasOf(`// a partition, a dead host: EXPLAIN it\n/* CREATE ROLE */ const x = 1;`)).toEqual([]);
  });
});
