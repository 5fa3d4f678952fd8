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
  it('sends rate × seconds arrivals with the mix, bounded, recording only 2xx', async () => {
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
      rate: 400,
      seconds: 1.5,
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
      // Bounded in time: a second and a half of arrivals, then their answers (loose for a busy machine).
      expect(result.durationSeconds).toBeLessThan(60);
    } finally {
      rmSync(file, { force: true });
    }
  });

  it('spaces arrivals evenly at the rate: each leaves when due, on the schedule clock (no per-second bursts)', async () => {
    // A clock the test moves: the driver's sleeps advance it, so what is checked is the schedule,
    // not how promptly this machine wakes a timer.
    let now = 0;
    const clock = {
      now: () => now,
      sleep: async (ms: number) => {
        now += ms;
        await new Promise((resolve) => setImmediate(resolve));
      },
    };
    const answers: { dueMs: number; leftMs: number }[] = [];
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
      mix: { ...DEFAULT_MIX, concurrentDuplicates: 0 },
      run: { id: 'even', startedAt: 1_764_460_800 },
      clock,
      onAnswer: (answer) => answers.push(answer),
    });
    expect(result.arrivals).toBe(600);
    expect(answers).toHaveLength(result.requests);
    // Every arrival left at its due time, and due times are 5 ms apart: 20 in every 100 ms,
    // where a sender bursting once a second would put 200 in the first 100 ms of each second.
    for (const answer of answers) expect(answer.leftMs).toBe(answer.dueMs);
    const windows = Array.from({ length: 30 }, () => 0);
    for (const answer of answers) windows[Math.floor(answer.dueMs / 100)]! += 1;
    expect(new Set(windows)).toEqual(new Set([20]));
    expect(result.scheduleLagP99Ms).toBe(0);
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

  it('sends no arrival once its stop signal is aborted', async () => {
    const stop = new AbortController();
    const result = await drive({
      baseUrl: url,
      targets: [{ endpoint: 'gh', provider: 'github', secret: 'secret' }],
      rate: 100,
      seconds: 600,
      connections: 4,
      maxInFlight: 100,
      requestTimeoutMs: 5_000,
      mix: DEFAULT_MIX,
      run: { id: 'stp', startedAt: 1_764_460_800 },
      stop: stop.signal,
      onAnswer: () => {
        if (!stop.signal.aborted) stop.abort();
      },
    });
    // The arrivals due before the first answer came back, and none after.
    expect(result.arrivals).toBeGreaterThanOrEqual(1);
    expect(result.arrivals).toBeLessThan(600 * 100);
    expect(result.requests).toBe(result.arrivals + result.kinds['concurrent-duplicate']);
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
