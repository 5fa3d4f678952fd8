import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

// A receiver on 127.0.0.1 that answers with exactly the bytes a test gives it: any body (a NUL,
// UTF-16, invalid UTF-8, gzip, megabytes) and header values sent as raw bytes (Node writes a
// header value one byte a character, so a UTF-8 value goes out as its UTF-8 bytes, not Latin-1).

export interface ByteAnswer {
  readonly status: number;
  /** Values are written as their UTF-8 bytes, whatever characters they hold. */
  readonly headers?: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

export interface ReceivedRequest {
  readonly path: string;
  readonly eventId: string;
  readonly webhookId: string;
  readonly at: number;
}

export interface ByteReceiver {
  readonly url: string;
  readonly requests: ReceivedRequest[];
  close(): Promise<void>;
}

/** `answer` is asked per request: its path, and how many requests that path had before it. */
export async function startByteReceiver(
  answer: (path: string, request: ReceivedRequest, before: number) => ByteAnswer,
): Promise<ByteReceiver> {
  const requests: ReceivedRequest[] = [];
  const server: Server = createServer(async (req, res) => {
    for await (const _ of req);
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const received = {
      path,
      eventId: String(req.headers['x-hookgate-event-id'] ?? ''),
      webhookId: String(req.headers['webhook-id'] ?? ''),
      at: Date.now(),
    };
    const before = requests.filter((r) => r.path === path).length;
    requests.push(received);
    const { status, headers = {}, body } = answer(path, received, before);
    // A client that read what it wanted and hung up (a 10 MiB body) is not an error here.
    res.on('error', () => {});
    res.socket?.on('error', () => {});
    const raw = Object.fromEntries(
      Object.entries(headers).map(([name, value]) => [name, Buffer.from(value, 'utf8').toString('latin1')]),
    );
    res.writeHead(status, { 'content-length': String(body.length), ...raw });
    res.end(body);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
