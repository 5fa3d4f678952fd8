import { execFile } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drive } from '../../../load/driver/driver.ts';
import { DEFAULT_MIX } from '../../../load/lib/mix.ts';

let server: Server;
let url: string;
const arrivals: { at: number; id: string }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const id = String(req.headers['webhook-id'] ?? req.headers['x-github-delivery'] ?? '');
    arrivals.push({ at: performance.now(), id });
    req.resume();
    req.on('end', () => {
      // Every 7th distinct event is refused, so refusals are counted and never recorded.
      const refused = id.endsWith('7');
      res.writeHead(refused ? 503 : 200, { 'content-type': 'application/json' });
      res.end(refused ? '{"error":"overloaded"}' : '{"status":"accepted"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

describe('load driver', () => {
  it('spaces arrivals evenly at the rate (no per-second bursts), bounded, recording only 2xx', async () => {
    const file = join(tmpdir(), `hookgate-driver-${process.pid}.jsonl`);
    arrivals.length = 0;
    const result = await drive({
      baseUrl: url,
      targets: [
        {
          endpoint: 'things',
          provider: 'standard-webhooks',
          secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
        },
      ],
      rate: 200,
      seconds: 3,
      connections: 16,
      maxInFlight: 1000,
      requestTimeoutMs: 5_000,
      mix: DEFAULT_MIX,
      run: { id: 'drv', startedAt: 1_764_460_800 },
      recordTo: file,
    });
    try {
      expect(result.arrivals).toBe(600);
      expect(result.kinds['later-duplicate']).toBeGreaterThan(20);
      expect(result.kinds['concurrent-duplicate']).toBeGreaterThan(10);
      expect(result.requests).toBe(600 + result.kinds['concurrent-duplicate']);
      expect(arrivals).toHaveLength(result.requests);
      expect(result.non2xx).toBeGreaterThan(0);
      expect(result.acked + result.non2xx).toBe(result.requests);
      const lines = readFileSync(file, 'utf8').trim().split('\n');
      expect(lines).toHaveLength(result.acked);
      expect(lines.every((line) => !JSON.parse(line).event_id.endsWith('7'))).toBe(true);
      // Evenly spaced: each second's arrivals spread over its ten 100 ms windows (about 10 % each),
      // where autocannon's overallRate would put nearly all of them in the first window. Loose
      // enough for a busy machine, where a stalled event loop sends what fell due at once.
      const first = arrivals[0]!.at;
      const windows = Array.from({ length: 30 }, () => 0);
      for (const a of arrivals) {
        const w = Math.floor((a.at - first) / 100);
        if (w < 30) windows[w]! += 1;
      }
      // A busy machine can stall this process's event loop (the receiver and the driver share
      // it) for most of a second, which then shows few arrivals and a catch-up burst; a bursting
      // sender shows it in every second. So two of the three seconds must be even.
      const seconds = [0, 1, 2].map((second) => {
        const tenths = windows.slice(second * 10, second * 10 + 10);
        const total = tenths.reduce((sum, n) => sum + n, 0);
        const even =
          total > 100 && Math.max(...tenths) / total < 0.4 && tenths.filter((n) => n > 0).length >= 6;
        return { tenths: tenths.join(' '), even };
      });
      expect(
        seconds.filter((second) => second.even).length,
        `windows per second: ${seconds.map((second) => second.tenths).join(' | ')}`,
      ).toBeGreaterThanOrEqual(2);
      expect(result.durationSeconds).toBeLessThan(6);
    } finally {
      rmSync(file, { force: true });
    }
  });

  it('stops at the count bound before the time bound', async () => {
    const result = await drive({
      baseUrl: url,
      targets: [{ endpoint: 'gh', provider: 'github', secret: 'secret' }],
      rate: 500,
      seconds: 60,
      maxArrivals: 50,
      connections: 4,
      maxInFlight: 100,
      requestTimeoutMs: 5_000,
      mix: DEFAULT_MIX,
      run: { id: 'cnt', startedAt: 1_764_460_800 },
    });
    expect(result.arrivals).toBe(50);
    expect(result.durationSeconds).toBeLessThan(5);
  });

  it('the command line: secrets from the named environment variables, a JSON summary, exit 1 on any non-2xx', async () => {
    const run = promisify(execFile);
    const file = join(tmpdir(), `hookgate-driver-cli-${process.pid}.jsonl`);
    const args = [
      'load/driver/main.ts',
      '--url',
      url,
      '--target',
      'gh,github,DRIVER_TEST_SECRET',
      '--rate',
      '100',
      '--seconds',
      '1',
      '--out',
      file,
    ];
    try {
      const failed = await run(process.execPath, args, {
        env: { ...process.env, DRIVER_TEST_SECRET: 's3cret' },
      }).then(
        () => null,
        (error: { code: number; stdout: string }) => error,
      );
      // The test server refuses every event id ending in 7, so the run must report failure.
      expect(failed?.code).toBe(1);
      const summary = JSON.parse(failed!.stdout) as { arrivals: number; acked: number; non2xx: number };
      expect(summary.arrivals).toBe(100);
      expect(summary.non2xx).toBeGreaterThan(0);
      expect(readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(summary.acked);
      const unset = await run(process.execPath, args, {
        env: { ...process.env, DRIVER_TEST_SECRET: '' },
      }).then(
        () => null,
        (error: { code: number; stderr: string }) => error,
      );
      expect(unset?.code).toBe(1);
      expect(unset?.stderr).toContain('DRIVER_TEST_SECRET is not set');
    } finally {
      rmSync(file, { force: true });
    }
  });
});
