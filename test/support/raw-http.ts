import { connect, type Socket } from 'node:net';

export interface RawExchange {
  /** Everything the server sent back. */
  readonly response: string;
  /** Body bytes the client managed to hand to the kernel before the server closed or refused. */
  readonly bodyBytesWritten: number;
  /** From the first byte sent to the connection ending. */
  readonly elapsedMs: number;
  /** How the connection ended: the server closed it, or the client's own deadline passed. */
  readonly ended: 'closed' | 'deadline';
}

export interface RawOptions {
  /** Sent first, as is (request line and headers, up to and including the blank line, or part of them). */
  readonly head: string;
  /** Body chunks to push as fast as the socket takes them, until the server stops reading. */
  readonly flood?: { readonly chunk: Buffer; readonly chunked: boolean };
  /** Bytes to trickle one at a time, `trickleIntervalMs` apart. */
  readonly trickle?: string;
  readonly trickleIntervalMs?: number;
  /** The client gives up (and reports `deadline`) after this long. */
  readonly deadlineMs: number;
}

/**
 * Talks HTTP/1.1 over a bare socket, so a test can send what no well-behaved client would:
 * a lying Content-Length, an endless chunked body, headers one byte a second.
 */
export function rawExchange(port: number, options: RawOptions): Promise<RawExchange> {
  return new Promise((resolve) => {
    const socket: Socket = connect(port, '127.0.0.1');
    const started = Date.now();
    let response = '';
    let done = false;
    let headBytes = 0;
    let trickleTimer: NodeJS.Timeout | undefined;
    const finish = (ended: RawExchange['ended']) => {
      if (done) return;
      done = true;
      clearTimeout(deadline);
      clearInterval(trickleTimer);
      const bodyBytesWritten = Math.max(0, socket.bytesWritten - headBytes);
      socket.destroy();
      resolve({ response, bodyBytesWritten, elapsedMs: Date.now() - started, ended });
    };
    const deadline = setTimeout(() => finish('deadline'), options.deadlineMs);
    socket.on('data', (chunk: Buffer) => {
      response += chunk.toString('latin1');
    });
    socket.on('error', () => finish('closed'));
    socket.on('close', () => finish('closed'));
    socket.on('connect', () => {
      socket.write(options.head);
      headBytes = Buffer.byteLength(options.head);
      if (options.flood) {
        const { chunk, chunked } = options.flood;
        const frame = chunked
          ? Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')])
          : chunk;
        const pump = () => {
          while (!done && !socket.destroyed && socket.write(frame)) {
            // keep writing until the kernel's buffers are full
          }
        };
        socket.on('drain', pump);
        pump();
      }
      if (options.trickle) {
        let index = 0;
        const text = options.trickle;
        trickleTimer = setInterval(() => {
          if (index >= text.length || socket.destroyed) {
            clearInterval(trickleTimer);
            return;
          }
          socket.write(text[index]!);
          headBytes += 1;
          index += 1;
        }, options.trickleIntervalMs ?? 1_000);
      }
    });
  });
}

/** The status code of a raw HTTP response, or 0 when nothing came back. */
export function statusOf(response: string): number {
  const match = /^HTTP\/1\.1 (\d{3})/.exec(response);
  return match ? Number(match[1]) : 0;
}

/** The JSON body of a raw HTTP response (Content-Length framed). */
export function jsonOf(response: string): Record<string, unknown> {
  const body = response.slice(response.indexOf('\r\n\r\n') + 4);
  try {
    return JSON.parse(body) as Record<string, unknown>;
  } catch {
    return { raw: body };
  }
}
