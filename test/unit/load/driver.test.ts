import { readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
      // Evenly spaced: in every 100 ms window about 20 arrivals (+ concurrent copies), never a
      // second's worth at once. autocannon's overallRate would put ~200 in the first window.
      const first = arrivals[0]!.at;
      const windows = new Map<number, number>();
      for (const a of arrivals) {
        const w = Math.floor((a.at - first) / 100);
        windows.set(w, (windows.get(w) ?? 0) + 1);
      }
      const full = [...windows.entries()].filter(([w]) => w < 29).map(([, n]) => n);
      expect(full.length).toBeGreaterThanOrEqual(28);
      // Loose enough for a busy machine (a stalled event loop sends what fell due at once).
      expect(Math.max(...full)).toBeLessThan(60);
      expect(full.filter((n) => n >= 10).length).toBeGreaterThanOrEqual(25);
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
});
