import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePasswordHash, verifyPassword } from '../../services/console/security/passwords.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { CLI, runHookgate } from '../support/process.ts';
import { workerConfigDocument, writeConfigFile } from '../support/worker-harness.ts';

// `serve --role console` outside the embedded demo never starts an open console.
let db: TestDatabase;
let configFile: string;

beforeAll(async () => {
  db = await createTestDatabase();
  configFile = writeConfigFile(workerConfigDocument({ shop: { handler: 'record' } }));
});

afterAll(async () => {
  await db?.drop();
});

describe('serve --role console', () => {
  it('refuses to start (exit 2) without a session key or a way to sign in, saying what to set', async () => {
    const result = await runHookgate(['serve', '--role', 'console', '--config', configFile], {
      env: { DATABASE_URL: db.url, CONSOLE_PORT: '0', METRICS_PORT: '0' },
    });
    expect(result.code).toBe(2);
    expect(result.output).toContain(
      'config_invalid: The console cannot start (sign-in is required outside the embedded demo)',
    );
    expect(result.output).toContain('console.sessionSecret (or env CONSOLE_SESSION_SECRET) is not set');
    expect(result.output).toContain('nobody can sign in');
  });

  it('hash-password reads the password from stdin, never from an argument', async () => {
    const argument = await runHookgate(['console', 'hash-password', 'my-password-argument'], {});
    expect(argument.code).toBe(2);
    expect(argument.output).toContain('too many arguments');
    const child = spawn(process.execPath, [CLI, 'console', 'hash-password'], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    child.stdin.end('correct horse battery staple\n');
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    expect(await new Promise((resolve) => child.on('exit', resolve))).toBe(0);
    const hash = parsePasswordHash(out.trim());
    expect(hash).not.toBeNull();
    // The trailing newline a shell adds is not part of the password.
    expect(await verifyPassword('correct horse battery staple', hash!)).toBe(true);
  });
});
