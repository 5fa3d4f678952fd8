import { chmodSync, copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../services/core/db/embedded.ts';
import { ROOT, runHookgate, startHookgate } from '../support/process.ts';
import { waitFor } from '../support/worker-harness.ts';

// The newcomer's path: no DATABASE_URL, the shipped example config, `serve`, then `send-test`.
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'hookgate-embedded-'));
  // PostgreSQL runs as the postgres user when the tests run as root; it must reach ./.hookgate.
  chmodSync(dir, 0o755);
  copyFileSync(join(ROOT, 'hookgate.example.yaml'), join(dir, 'hookgate.yaml'));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

// Seven hookgate processes and an initdb: minutes on a busy machine, seconds on a quiet one.
describe('serve with the embedded PostgreSQL', { timeout: 360_000 }, () => {
  it('announces it first, migrates itself, applies send-test events end to end and stops cleanly', async () => {
    const port = await freePort();
    const consolePort = await freePort();
    const env = {
      DATABASE_URL: undefined,
      PORT: String(port),
      METRICS_PORT: String(await freePort()),
      CONSOLE_PORT: String(consolePort),
    };
    const server = startHookgate(['serve', '--config', 'hookgate.yaml'], { cwd: dir, env });
    try {
      const serving = await server.waitFor(/hookgate is serving/, 240_000);
      // The demo's secrets are public: it listens on loopback only and says so loudly.
      expect(JSON.parse(serving).host).toBe('127.0.0.1');
      expect(server.output()).toMatch(/"level":"warn".*DEMO ONLY: endpoints\.demo\.secrets\[0\]/);
      const firstLine = JSON.parse(server.output().split('\n')[0] ?? '{}') as { msg?: string };
      expect(firstLine.msg).toMatch(
        /DATABASE_URL is not set: starting an embedded PostgreSQL under \.\/\.hookgate\//,
      );
      expect(existsSync(join(dir, '.hookgate', 'pg', 'PG_VERSION'))).toBe(true);

      const sent = await runHookgate(
        ['send-test', '--endpoint', 'demo', '--config', 'hookgate.yaml', '--duplicates', '1'],
        {
          cwd: dir,
          env,
        },
      );
      expect(sent.code).toBe(0);
      expect(sent.output).toMatch(/delivery: HTTP 200 .*"status":"accepted"/);
      expect(sent.output).toMatch(/duplicate 1: HTTP 200 .*"status":"duplicate"/);

      const eventId = /Sending test event (\S+)/.exec(sent.output)?.[1];
      expect(eventId).toBeDefined();
      // `--role all` (the default) also runs the worker: the test event ends ignored (settled,
      // no business write).
      await waitFor(
        'the test event ignored',
        async () => {
          const listed = await runHookgate(
            ['events', 'show', eventId!, '--endpoint', 'demo', '--json', '--config', 'hookgate.yaml'],
            { cwd: dir, env: { ...env } },
          );
          return listed.output.includes('"status": "ignored"');
        },
        120_000,
        500,
      );

      // A second serve in the same directory would borrow this one's PostgreSQL and lose it (503
      // on every delivery) when this one stops: it is refused at start, naming this one.
      const second = await runHookgate(['serve', '--config', 'hookgate.yaml'], {
        cwd: dir,
        env: { DATABASE_URL: undefined, PORT: String(await freePort()), METRICS_PORT: '0' },
      });
      expect(second.code, second.output).toBe(1);
      expect(second.output).toMatch(
        new RegExp(
          `^hookgate: embedded_in_use: Another "hookgate serve" \\(pid ${server.child.pid}\\) is running on the embedded PostgreSQL under `,
          'm',
        ),
      );
      // The CLI commands shared the server's database; they must not have stopped it.
      const again = await runHookgate(['send-test', '--endpoint', 'demo', '--config', 'hookgate.yaml'], {
        cwd: dir,
        env,
      });
      expect(again.output).toMatch(/delivery: HTTP 200 .*"status":"accepted"/);

      // `--role all` with the embedded database also serves the console, announced with its URL,
      // open without sign-in on loopback (the demo), and it shows the event.
      const announced = JSON.parse(
        server
          .output()
          .split('\n')
          .find((line) => line.includes('console at http')) ?? '{}',
      );
      expect(announced).toMatchObject({
        url: `http://127.0.0.1:${consolePort}/`,
        host: '127.0.0.1',
        sign_in: false,
      });
      expect(announced.msg).toBe(
        `console at http://127.0.0.1:${consolePort}/ (embedded demo: no sign-in, loopback only)`,
      );
      const page = await fetch(`http://127.0.0.1:${consolePort}/events?endpoint=demo`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain(eventId!);
    } finally {
      server.child.kill('SIGTERM');
    }
    expect(await server.exited()).toBe(0);
    expect(server.output()).toContain('stopped cleanly');
    // Its claim on the directory went with it.
    expect(existsSync(join(dir, '.hookgate', 'serve.pid'))).toBe(false);
  });
});
