// One-off proof that migrations/0001_baseline.sql makes the schema the unreleased chain 0001…0021
// made: a database migrated by the chain's own code (commit OLD, extracted with git archive) and
// one migrated by this tree, compared catalog line by catalog line, on PostgreSQL 15 and 18.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { migrate } from '../../services/core/db/migrate.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { ROOT } from '../support/process.ts';
import { describeSchema } from '../support/schema-catalog.ts';

const OLD = '59f622e';
let oldTree: string;
let chain: TestDatabase;
let baseline: TestDatabase;

beforeAll(async () => {
  oldTree = mkdtempSync(join(tmpdir(), 'hookgate-chain-'));
  execFileSync('sh', ['-c', `git -C "${ROOT}" archive ${OLD} | tar -x -C "${oldTree}"`]);
  symlinkSync(join(ROOT, 'node_modules'), join(oldTree, 'node_modules'));
  chain = await createTestDatabase({ migrated: false });
  baseline = await createTestDatabase({ migrated: false });
}, 120_000);

afterAll(async () => {
  await chain?.drop();
  await baseline?.drop();
  rmSync(oldTree, { recursive: true, force: true });
});

it('the baseline makes the schema the old chain made', async () => {
  execFileSync(process.execPath, [join(oldTree, 'services/cli/main.ts'), 'migrate', '--create-roles'], {
    cwd: oldTree,
    env: { ...process.env, DATABASE_URL: chain.url, LOG_LEVEL: 'warn' },
  });
  const client = new pg.Client({ connectionString: baseline.url });
  await client.connect();
  try {
    await migrate(client, baseline.url, { createRoles: true });
  } finally {
    await client.end();
  }
  const before = await describeSchema(chain.pool);
  const after = await describeSchema(baseline.pool);
  const onlyBefore = before.filter((line) => !after.includes(line));
  const onlyAfter = after.filter((line) => !before.includes(line));
  const report = `only in the chain (${onlyBefore.length}):\n${onlyBefore.join('\n')}\n\nonly in the baseline (${onlyAfter.length}):\n${onlyAfter.join('\n')}\n`;
  writeFileSync(join(tmpdir(), `hookgate-baseline-diff-${process.pid}.txt`), report);
  console.log(`${before.length} lines compared\n${report}`);
  expect(before.length).toBeGreaterThan(300);
  // What the baseline leaves out on purpose: the empty table a fresh install of the chain
  // converted (inbox_unpartitioned: its columns, constraints, primary key, body-digest index,
  // carried indexes, triggers) and the conversion's mirror trigger; inbox_partitions.from_at,
  // null only for that table, is NOT NULL; inbox_create_partitions no longer checks that the inbox
  // is partitioned yet. What it adds: the ledger's release and compatible_from.
  const subject = (line: string) => line.split('\n')[0]!;
  expect(
    onlyBefore
      .map(subject)
      .filter(
        (line) =>
          !/inbox_unpartitioned|^function hookgate\.inbox_mirror_key\(\)$/.test(line) &&
          !/^(column|constraint) hookgate\.inbox_partitions (#2 from_at|inbox_partitions_check) /.test(
            line,
          ) &&
          !/^function hookgate\.inbox_create_partitions\(/.test(line),
      ),
  ).toEqual([]);
  expect(
    onlyAfter
      .map(subject)
      .filter(
        (line) =>
          !/^column hookgate\.schema_migrations #[45] (release|compatible_from) text$/.test(line) &&
          !/^(column|constraint) hookgate\.inbox_partitions (#2 from_at|inbox_partitions_check|inbox_partitions_from_at_not_null) /.test(
            line,
          ) &&
          !/^function hookgate\.inbox_create_partitions\(/.test(line),
      ),
  ).toEqual([]);
  const definition = (lines: string[]) =>
    lines.find((line) => line.startsWith('function hookgate.inbox_create_partitions('))!.split('\n');
  const removed = definition(onlyBefore).filter((line) => !definition(onlyAfter).includes(line));
  // Those three lines (their END IF is spelt the same as others'), nothing else.
  expect(removed).toEqual([
    "  IF (SELECT relkind FROM pg_class WHERE oid = 'hookgate.inbox'::regclass) <> 'p' THEN",
    '    RETURN 0;',
  ]);
  expect(definition(onlyBefore).length - definition(onlyAfter).length).toBe(3);
}, 300_000);
