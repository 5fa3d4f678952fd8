import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface DownstreamRequest {
  readonly path: string;
  /** When it arrived (Date.now()). */
  readonly at: number;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
}

/** One scripted answer: a status, optionally after a delay (longer than the timeout = timeout). */
export interface Answer {
  readonly status: number;
  readonly delayMs?: number;
  readonly body?: string;
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * A downstream service on 127.0.0.1 that answers from a script per path (then `fallback`) and
 * records every request it receives, including ones whose answer the client gave up on.
 */
export interface FakeDownstream {
  readonly url: string;
  readonly requests: DownstreamRequest[];
  script(path: string, answers: readonly (Answer | number)[]): void;
  fallback: Answer;
  /** Resolves once at least n requests have arrived for path. */
  waitFor(path: string, n: number, timeoutMs?: number): Promise<DownstreamRequest[]>;
  close(): Promise<void>;
}

export async function startFakeDownstream(): Promise<FakeDownstream> {
  const scripts = new Map<string, Answer[]>();
  const requests: DownstreamRequest[] = [];
  const waiters: (() => void)[] = [];

  const fake: FakeDownstream = {
    url: '',
    requests,
    fallback: { status: 200 },
    script(path, answers) {
      scripts.set(
        path,
        answers.map((a) => (typeof a === 'number' ? { status: a } : a)),
      );
    },
    async waitFor(path, n, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      const matching = () => requests.filter((r) => r.path === path);
      while (matching().length < n) {
        if (Date.now() > deadline) {
          throw new Error(`expected ${n} requests to ${path}, got ${matching().length}`);
        }
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 100);
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      return matching();
    },
    close: async () => {},
  };

  const server: Server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    requests.push({
      path,
      at: Date.now(),
      headers: req.headers,
      body: Buffer.concat(chunks).toString('utf8'),
    });
    for (const wake of waiters.splice(0)) wake();
    const answer = scripts.get(path)?.shift() ?? fake.fallback;
    if (answer.delayMs) await new Promise((resolve) => setTimeout(resolve, answer.delayMs));
    if (res.destroyed) return;
    res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
    res.end(answer.body ?? JSON.stringify({ status: answer.status }));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return Object.assign(fake, {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
