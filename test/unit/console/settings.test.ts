import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { consoleSettings, isLoopback, parseUsersFile } from '../../../services/console/settings.ts';
import { parseConfig } from '../../../services/core/config/load.ts';

const endpoints = { pay: { provider: 'stripe', secrets: ['whsec_x'] } };
const HASH = 'scrypt$32768$8$1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2hoYQ';
const SECRET = 'x'.repeat(32);

const consoleOf = (section: Record<string, unknown> = {}) =>
  parseConfig({ endpoints, console: section }, {}).console;

function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('expected a refusal');
}

describe('the console section of the configuration', () => {
  it('has documented defaults', () => {
    expect(consoleOf()).toEqual({
      port: 8081,
      sessionTtl: 12 * 3_600_000,
      users: [],
      tokens: [],
      trustedProxyHops: 0,
      loginLimit: { maxFailures: 5, window: 900_000, delay: 30_000, maxDelay: 900_000 },
      poolSize: 4,
      queryTimeout: 5_000,
      pageSize: 50,
      scanRows: 20_000,
      latencySample: 10_000,
      api: { rateLimit: 600, idempotencyTtl: 86_400_000, maxBodyBytes: 65_536 },
    });
  });

  it('gives users, tokens and proxy sign-ins a role: viewer or operator, operator when unset', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookgate-console-roles-'));
    const file = join(dir, 'users');
    writeFileSync(file, `carol:${HASH}:viewer\ndave:${HASH}:operator\nerin:${HASH}\n`);
    const settings = consoleSettings(
      consoleOf({
        users: [
          { name: 'alice', passwordHash: HASH },
          { name: 'bob', passwordHash: HASH, role: 'viewer' },
        ],
        tokens: [
          { name: 'ci', sha256: 'a'.repeat(64) },
          { name: 'dash', sha256: 'b'.repeat(64), role: 'viewer' },
        ],
        proxyAuth: { trustedAddresses: ['10.0.0.1'], role: 'viewer' },
      }),
      false,
      { CONSOLE_SESSION_SECRET: SECRET, CONSOLE_USERS_FILE: file },
    );
    expect([...settings.users.values()].map((user) => `${user.name}:${user.role}`)).toEqual([
      'alice:operator',
      'bob:viewer',
      'carol:viewer',
      'dave:operator',
      'erin:operator',
    ]);
    expect(settings.tokens.map((token) => `${token.name}:${token.role}`)).toEqual([
      'ci:operator',
      'dash:viewer',
    ]);
    expect(settings.proxy?.role).toBe('viewer');
    expect(consoleOf({ proxyAuth: { trustedAddresses: ['10.0.0.1'] } }).proxyAuth?.role).toBe('operator');
    expect(refusal(() => consoleOf({ users: [{ name: 'x', passwordHash: HASH, role: 'admin' }] }))).toContain(
      'console.users[0].role: must be viewer or operator',
    );
    expect(() => parseUsersFile(`frank:${HASH}:admin\n`, 'users')).toThrow(
      /users line 1: the role "admin" is not viewer or operator/,
    );
    expect(() => parseUsersFile(`frank:${HASH}:viewer:extra\n`, 'users')).toThrow(
      /users line 1: expected name:hash/,
    );
  });

  it('names every problem by its key, in the units written', () => {
    const message = refusal(() =>
      consoleOf({
        sessionSecret: 'short',
        sessionTtl: '30d',
        users: [{ name: 'al ice', passwordHash: 'plain' }],
        tokens: [{ name: 'ci', sha256: 'abc' }],
        proxyAuth: { trustedAddresses: ['10.0.0.0/33', 'proxy.local'] },
        listenAddress: 'localhost',
        port: 70_000,
      }),
    );
    for (const line of [
      'console.sessionSecret: must be at least 32 characters',
      'console.sessionTtl: 30d is longer than the 7d maximum',
      'console.users[0].name: user names use letters',
      'console.users[0].passwordHash: must be a hash made by "hookgate console hash-password"',
      'console.tokens[0].sha256: must be the hex SHA-256',
      'console.proxyAuth.trustedAddresses[0]: must be an IP address or a CIDR block',
      'console.proxyAuth.trustedAddresses[1]: must be an IP address or a CIDR block',
      'console.listenAddress: must be an IP address',
      'console.port: 70000 is more than the 65535 maximum',
    ]) {
      expect(message).toContain(line);
    }
    expect(
      refusal(() =>
        consoleOf({
          users: [{ name: 'a', passwordHash: HASH }],
          tokens: [{ name: 'A', sha256: 'a'.repeat(64) }],
        }),
      ),
    ).toContain('console.tokens[0].name: "A" is named twice');
  });
});

describe('console settings at start', () => {
  it('outside the demo, refuses to start open: a session secret and a way to sign in are required', () => {
    const message = refusal(() => consoleSettings(consoleOf(), false, {}));
    expect(message).toContain('sign-in is required outside the embedded demo');
    expect(message).toContain('console.sessionSecret (or env CONSOLE_SESSION_SECRET) is not set');
    expect(message).toContain('nobody can sign in');
    expect(refusal(() => consoleSettings(consoleOf({ sessionSecret: SECRET }), false, {}))).toContain(
      'nobody can sign in',
    );
  });

  it('the embedded demo on loopback needs neither; on another address it is refused like any other', () => {
    const demo = consoleSettings(consoleOf(), true, {});
    expect(demo).toMatchObject({ demo: true, host: '127.0.0.1', port: 8081 });
    expect(
      refusal(() => consoleSettings(consoleOf(), true, { CONSOLE_LISTEN_ADDRESS: '0.0.0.0' })),
    ).toContain("it listens on 0.0.0.0, not loopback, so the demo's open console is refused");
    const withUser = consoleOf({ users: [{ name: 'bob', passwordHash: HASH }] });
    expect(
      consoleSettings(withUser, false, {
        CONSOLE_SESSION_SECRET: SECRET,
        CONSOLE_LISTEN_ADDRESS: '0.0.0.0',
      }).demo,
    ).toBe(false);
  });

  it('reads env overrides and the users file, and refuses hashes it cannot check', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookgate-console-users-'));
    const file = join(dir, 'users');
    writeFileSync(file, `# comment\n\nalice:${HASH}\n`);
    const settings = consoleSettings(consoleOf({ users: [{ name: 'bob', passwordHash: HASH }] }), false, {
      CONSOLE_SESSION_SECRET: SECRET,
      CONSOLE_USERS_FILE: file,
      CONSOLE_PORT: '9000',
    });
    expect([...settings.users.keys()].sort()).toEqual(['alice', 'bob']);
    expect(settings.port).toBe(9000);
    expect(refusal(() => consoleSettings(consoleOf(), false, { CONSOLE_PORT: 'eighty' }))).toContain(
      'CONSOLE_PORT="eighty"',
    );
    writeFileSync(
      file,
      'alice:scrypt$2$1$1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2hoYQ\n',
    );
    expect(
      refusal(() =>
        consoleSettings(consoleOf(), false, { CONSOLE_SESSION_SECRET: SECRET, CONSOLE_USERS_FILE: file }),
      ),
    ).toContain('the password hash is not one hookgate can check');
    expect(() => parseUsersFile('no colon here\n', 'users')).toThrow(/users line 1: expected name:hash/);
    writeFileSync(file, `alice:${HASH}\n`);
    expect(
      refusal(() =>
        consoleSettings(consoleOf(), false, { CONSOLE_SESSION_SECRET: 'short', CONSOLE_USERS_FILE: file }),
      ),
    ).toContain('CONSOLE_SESSION_SECRET must be at least 32 characters');
  });

  it('knows loopback addresses', () => {
    expect(['127.0.0.1', '127.1.2.3', '::1'].map(isLoopback)).toEqual([true, true, true]);
    expect(['0.0.0.0', '10.0.0.1', '::', 'localhost'].map(isLoopback)).toEqual([false, false, false, false]);
  });
});
