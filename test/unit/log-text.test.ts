import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { textLine } from '../../services/core/log-text.ts';
import { ROOT } from '../support/process.ts';

describe('LOG_FORMAT=text', () => {
  it('turns a JSON line into one line a person reads: time, level, message, then the fields', () => {
    const json = `${JSON.stringify({
      level: 'info',
      time: '2026-12-04T14:02:11.250Z',
      service: 'hookgate',
      endpoint: 'demo',
      url: 'http://127.0.0.1:8081/',
      note: 'two words',
      msg: 'console at http://127.0.0.1:8081/',
    })}\n`;
    expect(textLine(json)).toBe(
      '14:02:11.250 INFO  console at http://127.0.0.1:8081/ endpoint=demo url=http://127.0.0.1:8081/ note="two words"\n',
    );
  });

  it('keeps an error with its code and message, and a stack indented below', () => {
    const line = textLine(
      `${JSON.stringify({
        level: 'error',
        time: '2026-12-04T14:02:11.250Z',
        err: {
          type: 'Error',
          message: 'boom',
          stack: 'Error: boom\n    at a (x.ts:1:1)\n    at b (y.ts:2:2)',
        },
        msg: 'apply failed',
      })}\n`,
    );
    expect(line).toBe('14:02:11.250 ERROR apply failed err=boom\n    at a (x.ts:1:1)\n    at b (y.ts:2:2)\n');
  });

  it('is what a real command logs with LOG_FORMAT=text, and an unknown format is refused', async () => {
    const run = (env: Record<string, string>) =>
      new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = spawn(
          process.execPath,
          [join(ROOT, 'services/cli/main.ts'), 'migrate', '--check-config', '--config', '/nonexistent.yaml'],
          {
            env: { ...process.env, DATABASE_URL: 'postgres://u@127.0.0.1:1/x', ...env },
            stdio: ['ignore', 'ignore', 'pipe'],
          },
        );
        let stderr = '';
        child.stderr.on('data', (chunk: Buffer) => {
          stderr += chunk.toString();
        });
        child.on('close', (code) => resolve({ code, stderr }));
      });
    const refused = await run({ LOG_FORMAT: 'pretty' });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('LOG_FORMAT="pretty" is not a log format');
  });
});
