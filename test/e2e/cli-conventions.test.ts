import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { targetUrl } from '../../services/cli/commands/send-test.ts';
import { classify } from '../../services/cli/support/exit.ts';
import { age, table } from '../../services/cli/support/format.ts';
import { runCliInProcess } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { CLI, ROOT, runHookgate } from '../support/process.ts';
import { workerConfigDocument } from '../support/worker-harness.ts';

// One convention for every command: exit 0 ok, 1 operational failure, 2 bad usage, each failure
// one coded line on stderr and no stack; stdout stays the result. Parsing, usage and exit codes are
// checked on the real program in this process (runCliInProcess: the same commands and database
// access, no child process); what only the real binary can show (stdout apart from the logs,
// the version, the working directory, the process's exit status) runs as real processes.
let db: TestDatabase;
let unmigrated: TestDatabase;
let configFile: string;
let emptyDir: string;

beforeAll(async () => {
  db = await createTestDatabase();
  unmigrated = await createTestDatabase({ migrated: false });
  emptyDir = mkdtempSync(join(tmpdir(), 'hookgate-cli-'));
  configFile = join(emptyDir, 'hookgate.yaml');
  writeFileSync(configFile, stringify(workerConfigDocument({ demo: { handler: 'record' } })));
});

afterAll(async () => {
  await db?.drop();
  await unmigrated?.drop();
});

const noStack = (output: string) => expect(output).not.toMatch(/\n\s+at .+:\d+:\d+/);
/** `hookgate <args>` in this process, on the test's database and configuration unless overridden. */
const cli = (args: readonly string[], env: Record<string, string | undefined> = {}) =>
  runCliInProcess(args, { DATABASE_URL: db.url, HOOKGATE_CONFIG: configFile, ...env });

describe('usage errors exit 2 with one line', () => {
  it.each([
    [['stats', '--bogus']],
    [['events', 'list', '--status', 'weird']],
    [['requeue']],
    [['stats', '--since', 'banana']],
    [['events', 'list', '--until', 'yesterday-ish']],
    [['prune', '--older-than', '1h']],
    [['requeue', '--endpoint', 'demo', '--orphans', '--status', 'dead']],
    [['discard', '--endpoint', 'demo', '--status', 'dead']],
    [['discard', '--endpoint', 'demo', '--reason', 'no target']],
    [['pause']],
  ])('hookgate %j', async (args) => {
    const run = await cli(args);
    expect(run.code, run.output).toBe(2);
    expect(run.output.trim().split('\n')).toHaveLength(1);
    expect(run.output).toMatch(/^hookgate: usage_invalid: /);
  });

  it('an unknown endpoint is refused by every command that takes one', async () => {
    for (const args of [
      ['events', 'list', '--endpoint', 'nope'],
      ['stats', '--endpoint', 'nope'],
      ['requeue', '--endpoint', 'nope'],
      ['send-test', '--endpoint', 'nope'],
      ['discard', '--endpoint', 'nope', '--id', 'evt_1', '--reason', 'r'],
      ['pause', '--endpoint', 'nope'],
      ['resume', '--endpoint', 'nope'],
    ]) {
      const run = await cli(args);
      expect(run.code, `${args.join(' ')}: ${run.output}`).toBe(2);
      expect(run.output).toMatch(/endpoint_unknown/);
    }
  });

  it('LOG_LEVEL=verbose and a DATABASE_URL that is not a URL are usage errors, not stacks', async () => {
    const verbose = await cli(['stats'], { LOG_LEVEL: 'verbose' });
    expect(verbose.code).toBe(2);
    expect(verbose.output).toMatch(/env_invalid: LOG_LEVEL="verbose"/);
    const bad = await cli(['stats'], { DATABASE_URL: 'not a url' });
    expect(bad.code).toBe(2);
    expect(bad.output).toMatch(/database_url_invalid/);
    noStack(bad.output);
  });
});

describe('operational failures exit 1 naming the host, never the password', () => {
  it.each([[['stats']], [['migrate']], [['events', 'list']], [['requeue', '--endpoint', 'demo']]])(
    'hookgate %j with the database down',
    async (args) => {
      const url = 'postgres://admin:s3cr3t-pw@127.0.0.1:1/hookgate';
      const run = await cli(args, { DATABASE_URL: url });
      expect(run.code, run.output).toBe(1);
      expect(run.output).toMatch(
        /database_unreachable: cannot reach PostgreSQL at 127\.0\.0\.1:1 \(ECONNREFUSED\)/,
      );
      expect(run.output).not.toMatch(/s3cr3t-pw/);
      noStack(run.output);
    },
  );

  it('the binary exits 1 too, with the same one line on stderr', async () => {
    const url = 'postgres://admin:s3cr3t-pw@127.0.0.1:1/hookgate';
    const run = await runSeparately(['stats'], { DATABASE_URL: url, HOOKGATE_CONFIG: configFile });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(
      /^hookgate: database_unreachable: cannot reach PostgreSQL at 127\.0\.0\.1:1 /m,
    );
    expect(run.stderr).not.toMatch(/s3cr3t-pw/);
    noStack(run.stderr);
  });

  it('an unknown host is one line too', async () => {
    const url = 'postgres://u:p@no-such-host.invalid:5432/x';
    const run = await cli(['stats'], { DATABASE_URL: url });
    expect(run.code).toBe(1);
    expect(run.output).toMatch(/database_unreachable: .*no-such-host\.invalid:5432 \(E(NOTFOUND|AI_AGAIN)\)/);
    noStack(run.output);
  });

  it('requeue on an unmigrated database is refused cleanly, naming the database', async () => {
    const run = await cli(['requeue', '--endpoint', 'demo', '--config', configFile], {
      DATABASE_URL: unmigrated.url,
      HOOKGATE_CONFIG: undefined,
    });
    expect(run.code, run.output).toBe(1);
    expect(run.output).toMatch(
      /database_not_migrated: PostgreSQL at 127\.0\.0\.1:\d+\/hookgate_test_\w+ is not ready/,
    );
    noStack(run.output);
  });
});

describe('which database', () => {
  it('refuses to create an empty embedded database in another directory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookgate-elsewhere-'));
    const run = await runHookgate(['stats'], { cwd: dir, env: { DATABASE_URL: '' } });
    expect(run.code, run.output).toBe(2);
    expect(run.output).toMatch(/database_missing: DATABASE_URL is not set and .* has no embedded database/);
    expect(run.output).not.toMatch(/hookgate migrate/);
    expect(existsSync(join(dir, '.hookgate'))).toBe(false);
  });

  it('says which database it reads, on stderr, and keeps stdout the JSON result', async () => {
    const run = await cli(['stats', '--json', '--config', configFile], { HOOKGATE_CONFIG: undefined });
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/^hookgate: using PostgreSQL at 127\.0\.0\.1:\d+\/hookgate_test_/m);
    expect(() => JSON.parse(run.stdout)).not.toThrow();
  });

  it('migrate --dry-run lists what it would apply and applies nothing', async () => {
    const run = await cli(['migrate', '--dry-run', '--json'], { DATABASE_URL: unmigrated.url });
    expect(run.code, run.output).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report.would_apply[0]).toBe('0001_baseline');
    const ledger = await unmigrated.pool.query(`SELECT to_regclass('hookgate.schema_migrations') AS t`);
    expect(ledger.rows[0].t).toBeNull();
    const current = await cli(['migrate', '--dry-run']);
    expect(current.output).toMatch(/is up to date; nothing to apply/);
  });

  it('migrate names each migration the same in a dry run and when it applies it (0001_baseline)', async () => {
    const fresh = await createTestDatabase({ migrated: false });
    try {
      const env = { DATABASE_URL: fresh.url };
      const dry = await runCliInProcess(['migrate', '--dry-run', '--json'], env);
      expect(dry.code, dry.output).toBe(0);
      const applied = await runCliInProcess(['migrate', '--json'], env);
      expect(applied.code, applied.output).toBe(0);
      const wouldApply = JSON.parse(dry.stdout).would_apply;
      expect(wouldApply[0]).toBe('0001_baseline');
      expect(JSON.parse(applied.stdout).applied).toEqual(wouldApply);
      const human = await runCliInProcess(['migrate'], env);
      expect(human.stdout).toMatch(/was already up to date/);
    } finally {
      await fresh.drop();
    }
  });
});

/** stdout and stderr apart, to prove stdout holds the result alone. */
function runSeparately(args: readonly string[], env: Record<string, string>) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { cwd: ROOT, env: { ...process.env, ...env } },
      (error, stdout, stderr) =>
        resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('stdout is the result', () => {
  it.each([
    [['stats', '--json']],
    [['events', 'list', '--json']],
    [['prune', '--dry-run', '--json']],
    [['migrate', '--dry-run', '--json']],
  ])('hookgate %j | jq works, with LOG_LEVEL=debug', async (args) => {
    const run = await runSeparately(args, {
      DATABASE_URL: db.url,
      HOOKGATE_CONFIG: configFile,
      LOG_LEVEL: 'debug',
    });
    expect(run.code, run.stderr).toBe(0);
    expect(() => JSON.parse(run.stdout)).not.toThrow();
    expect(run.stderr).toMatch(/hookgate: using PostgreSQL at/);
  });
});

describe('requeue --dry-run exits as the real run would', () => {
  it('2 (nothing_changed) when nothing matches, with the JSON result still on stdout', async () => {
    for (const extra of [[], ['--orphans']]) {
      const run = await cli(['requeue', '--endpoint', 'demo', ...extra, '--dry-run', '--json']);
      expect(run.code, run.stderr).toBe(2);
      expect(JSON.parse(run.stdout)).toMatchObject({ dry_run: true, would_requeue: 0 });
      expect(run.stderr).toMatch(/nothing_changed: .*nothing would be requeued/);
    }
  });
});

describe('help and version', () => {
  it('the binary: --version prints the package version and exits 0', async () => {
    const version = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;
    const run = await runHookgate(['--version']);
    expect(run.code).toBe(0);
    expect(run.output.trim()).toBe(version);
  });

  it.each(['stats', 'requeue', 'prune', 'migrate'])(
    '%s --help shows examples on stdout and exits 0',
    async (command) => {
      const help = await runCliInProcess([command, '--help']);
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(/Examples:\n\s+\$ hookgate /);
      expect(help.stderr).toBe('');
    },
  );
});

describe('helpers', () => {
  it('ages read at a glance; tables align', () => {
    expect(age(192)).toBe('3m12s');
    expect(age(7_500)).toBe('2h05m');
    expect(age(0.25)).toBe('250ms');
    expect(age(null)).toBe('-');
    expect(
      table(
        ['A', 'NUMBER'],
        [
          ['x', '1'],
          ['long', '12'],
        ],
      ),
    ).toBe('A     NUMBER\nx          1\nlong      12\n');
  });

  it('send-test --url takes the base URL or the endpoint URL', () => {
    expect(targetUrl('http://h:8080', 'demo')).toBe('http://h:8080/webhooks/demo');
    expect(targetUrl('http://h:8080/', 'demo')).toBe('http://h:8080/webhooks/demo');
    expect(targetUrl('http://h:8080/webhooks/demo', 'demo')).toBe('http://h:8080/webhooks/demo');
    expect(() => targetUrl('http://h:8080/webhooks/other', 'demo')).toThrow(/names endpoint "other"/);
  });

  it('EADDRINUSE is one coded line, exit 1', () => {
    const error = Object.assign(new Error('listen EADDRINUSE: address already in use 0.0.0.0:9464'), {
      code: 'EADDRINUSE',
      address: '0.0.0.0',
      port: 9464,
    });
    const { line, exitCode, stack } = classify(error);
    expect(line).toBe(
      'port_in_use: 0.0.0.0:9464 is already in use by another process (PORT / METRICS_PORT choose the ports).',
    );
    expect(exitCode).toBe(1);
    expect(stack).toBeUndefined();
  });
});
