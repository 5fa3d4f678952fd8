import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from '../core/logging.ts';
import type { GatewayMetrics } from '../core/metrics.ts';
import type { HeaderBag } from '../core/providers/types.ts';
import { activeTraceId } from '../core/tracing.ts';
import type { Endpoint } from './endpoints.ts';
import type { Answer } from './receive.ts';
import { RefusalLog } from './refusal-log.ts';

// How every request the gateway sees ends: counted, timed, logged (one line per delivery, or a
// sampled refusal summary), then answered in JSON — through the response, or on the raw socket
// for what Node's parser refused before there was one.

// Labels stay bounded: a path naming no endpoint is counted under one label.
const UNKNOWN_ENDPOINT = '(unknown)';

/** The bytes of a body read, kept on its request for the delivery's line (a WeakMap entry per delivery costs more). */
const BODY_BYTES = Symbol('hookgate.bodyBytes');
type BodySized = IncomingMessage & { [BODY_BYTES]?: number };

const MAPPED_IPV4 = /^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i;

/** The peer as people write it: an IPv4 address mapped into IPv6 is given as IPv4. */
function peerAddress(address: string | undefined): string | undefined {
  return address?.startsWith('::') ? address.replace(MAPPED_IPV4, '') : address;
}

/** Request headers as the providers read them: one string per name (repeats joined). */
export function headerBag(headers: IncomingHttpHeaders): HeaderBag {
  const bag: Record<string, string> = {};
  for (const name in headers) {
    const value = headers[name];
    if (typeof value === 'string') bag[name] = value;
    else if (Array.isArray(value)) bag[name] = value.join(', ');
  }
  return bag;
}

export interface Answering {
  /** Counts and logs an outcome without answering (a client that is gone). */
  record(endpoint: Endpoint | undefined, started: bigint, result: Answer, req?: IncomingMessage): void;
  /**
   * Records and answers. `close`: the connection ends after the answer instead of Node reading
   * (and discarding) whatever body the client still sends — for a 100 GB Content-Length, that is
   * 100 GB.
   */
  answer(
    res: ServerResponse,
    endpoint: Endpoint | undefined,
    started: bigint,
    result: Answer,
    close?: boolean,
  ): void;
  /** Records and answers on a socket that has no response (a request Node could not parse). */
  answerSocket(socket: Duplex, result: Answer): void;
  /** The bytes of a body read, for its delivery line. */
  noteBodySize(req: IncomingMessage, bytes: number): void;
  /** Writes the last refusal summary. */
  flush(): void;
}

export function createAnswering(deps: {
  readonly metrics: GatewayMetrics;
  readonly logger: Logger;
}): Answering {
  const refusals = new RefusalLog(deps.logger);
  // The per-delivery line carries only the fixed fields below, all strings or numbers: none can
  // hold a secret, and no redaction path can match them, so this logger skips pino's redaction,
  // which otherwise runs over every field of every line (a wildcard path) — the line is the same.
  const deliveryLog = deps.logger.child({}, { redact: [] });

  const record: Answering['record'] = (endpoint, started, result, req) => {
    const name = endpoint?.name ?? UNKNOWN_ENDPOINT;
    deps.metrics.deliveries.inc({
      endpoint: name,
      provider: endpoint?.provider.name ?? '',
      outcome: result.outcome,
    });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    deps.metrics.ackDuration.observe({ endpoint: name, outcome: result.outcome }, seconds);
    // Undefined fields are left out of the line by pino. Built in one object, in the line's
    // order: the per-delivery cost of a spread of a spread is a few allocations per answer.
    const line: Record<string, unknown> & { endpoint: string; outcome: string } = {
      endpoint: name,
      outcome: result.outcome,
      status: result.status,
      event_id: result.eventId,
      cause: result.cause || undefined,
      trace_id: activeTraceId(),
    };
    if (result.note) Object.assign(line, result.note);
    if (req) {
      // Who sent it and how much: the socket's peer (and X-Forwarded-For as given), user agent, body bytes.
      const headers = req.headers;
      const forwarded = headers['x-forwarded-for'];
      const agent = headers['user-agent'];
      const read = (req as BodySized)[BODY_BYTES];
      const declared = read === undefined ? Number(headers['content-length'] ?? Number.NaN) : read;
      line.source = peerAddress(req.socket?.remoteAddress);
      line.forwarded_for = typeof forwarded === 'string' ? forwarded.slice(0, 200) : undefined;
      line.user_agent = typeof agent === 'string' ? agent.slice(0, 200) : undefined;
      line.body_bytes = Number.isFinite(declared) ? declared : undefined;
    }
    line.duration_ms = Math.round(seconds * 1e6) / 1e3;
    if (result.status >= 500) deliveryLog.warn(line, 'delivery not accepted');
    else if (result.status >= 300 || result.status === 0) refusals.record(line);
    else deliveryLog.info(line, 'delivery answered');
  };

  const answer: Answering['answer'] = (res, endpoint, started, result, close = false) => {
    record(endpoint, started, result, res.req);
    // Answered before the body was read (unknown endpoint, wrong method, ...): the same rule.
    const closing = close || !res.req?.complete;
    if (result.status === 503) res.setHeader('Retry-After', '5');
    if (result.status === 405) res.setHeader('Allow', 'POST');
    if (result.retryAfter !== undefined) res.setHeader('Retry-After', String(result.retryAfter));
    if (result.headers)
      for (const [name, value] of Object.entries(result.headers)) res.setHeader(name, value);
    // Written directly: Express's res.json() adds content negotiation work the hot path does not need.
    // A handshake's answer may be bare text, or nothing at all (a 204, or a body it leaves out).
    const payload =
      result.text ?? (result.status === 204 || result.body === undefined ? '' : JSON.stringify(result.body));
    // Name, value pairs in one list: the headers as the object form would write them, in its order.
    const headers: (string | number)[] = [];
    if (result.status !== 204) {
      if (payload === '' && result.text === undefined) headers.push('content-length', 0);
      else
        headers.push(
          'content-type',
          result.text === undefined ? 'application/json; charset=utf-8' : 'text/plain; charset=utf-8',
          'content-length',
          Buffer.byteLength(payload),
        );
    }
    if (closing) headers.push('connection', 'close');
    res.writeHead(result.status, headers);
    if (closing) {
      const socket = res.socket;
      res.on('finish', () => socket?.destroy());
    }
    res.end(payload);
  };

  const answerSocket: Answering['answerSocket'] = (socket, result) => {
    record(undefined, process.hrtime.bigint(), result);
    const payload = JSON.stringify(result.body);
    socket.end(
      `HTTP/1.1 ${result.status} ${STATUS_CODES[result.status] ?? ''}\r\ncontent-type: application/json; charset=utf-8\r\n` +
        `content-length: ${Buffer.byteLength(payload)}\r\nconnection: close\r\n\r\n${payload}`,
      () => socket.destroy(),
    );
  };

  return {
    record,
    answer,
    answerSocket,
    noteBodySize: (req, bytes) => {
      (req as BodySized)[BODY_BYTES] = bytes;
    },
    flush: () => refusals.flush(),
  };
}
