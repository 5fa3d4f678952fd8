import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Answering } from './answer.ts';
import type { Endpoint } from './endpoints.ts';
import type { Answer } from './receive.ts';
import { refuse } from './receive.ts';

// Node's `clientError`: a request that timed out, or that its parser refused (headers too large,
// not HTTP/1.1). Answered in JSON and counted like every other refusal — through the delivery's
// own response when one is being read, else on the raw socket.

/** A webhook request whose body is still being read: a timeout is answered through it. */
export interface InFlight {
  readonly res: ServerResponse;
  readonly endpoint: Endpoint;
  readonly started: bigint;
}

export function createClientErrorListener(
  answering: Answering,
  inFlight: WeakMap<Duplex, InFlight>,
): (error: NodeJS.ErrnoException, socket: Duplex) => void {
  return (error, socket) => {
    const code = error.code ?? '';
    let result: Answer | null = null;
    if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      result = refuse('request_timeout', 'The request was not received in time.');
      const pending = inFlight.get(socket);
      if (pending && !pending.res.headersSent) {
        inFlight.delete(socket);
        answering.answer(pending.res, pending.endpoint, pending.started, result, true);
        return;
      }
    } else if (code === 'HPE_HEADER_OVERFLOW') {
      result = refuse('headers_too_large', 'The request headers exceed the limit.');
    } else if (code.startsWith('HPE_')) {
      result = refuse('request_malformed', 'The request is not valid HTTP/1.1.');
    }
    const writable = (socket as Socket).writable && !inFlight.get(socket)?.res.headersSent;
    if (result === null || !writable) {
      socket.destroy();
      return;
    }
    answering.answerSocket(socket, result);
  };
}
