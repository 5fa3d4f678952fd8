import { type Dispatcher, fetch, Request, type Response } from 'undici';
import { ANSWER_BYTES, answerText, headersText, storableError } from '../core/destinations/answer.ts';
import type { Redactor } from '../core/destinations/redact.ts';
import { AddressRefusedError } from './guarded-dispatcher.ts';

// One POST to a destination, and what came back, made safe to store: the answer's first bytes
// as bytes, its rendering and its headers as escaped, bounded text, every text with the
// destination's secrets spelled as their references (services/core/destinations/redact.ts).
// undici's own fetch, not Node's global one: a dispatcher of the undici package (the address
// guard, guarded-dispatcher.ts) works only with the fetch of the same version.

/** What a receiver answered (an error answer; a 2xx body is not read). */
export interface DestinationAnswer {
  /** Its first bytes (at most ANSWER_BYTES), as fetch gave them (a gzip body decoded). */
  readonly bytes: Buffer;
  /** Those bytes as readable text: decoded, escaped, bounded. */
  readonly text: string;
  /** Its headers, `name: value` a line, escaped and bounded. */
  readonly headers: string;
}

export type DestinationSend =
  /** `status`: the HTTP status (null from a broker); `note`: what a broker's acknowledgement said. */
  | { readonly outcome: 'delivered'; readonly status: number | null; readonly note?: string }
  /** 5xx, 429, 408, a timeout or a network failure: tried again after a backoff. */
  | {
      readonly outcome: 'retry';
      readonly status: number | null;
      readonly error: string;
      readonly answer: DestinationAnswer | null;
      /** A 429's or 503's Retry-After, in seconds. */
      readonly retryAfterSeconds?: number;
    }
  /** Any other answer (other 4xx, an unfollowed 3xx), or a request that cannot be built. */
  | {
      readonly outcome: 'dead';
      readonly status: number | null;
      readonly error: string;
      readonly answer: DestinationAnswer | null;
    };

export interface DestinationRequest {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | Buffer;
  readonly timeoutMs: number;
  /** Applied to every text and to the kept bytes. */
  readonly redactor: Redactor;
  /** Aborts the request when the relay stops. */
  readonly signal?: AbortSignal;
  /** Opens the connections (the address guard of relay.allowedDestinations); default: undici's. */
  readonly dispatcher?: Dispatcher;
  /** The clock a Retry-After date is read against. */
  readonly nowMs?: number;
}

/**
 * Retry-After (RFC 9110): delay-seconds or an HTTP-date. Null when absent or unreadable; a date
 * in the past is 0.
 */
export function retryAfterSecondsOf(value: string | null, nowMs: number): number | null {
  if (value === null) return null;
  const text = value.trim();
  if (/^\d{1,10}$/.test(text)) return Number(text);
  // Only the date forms HTTP uses (they contain a comma or "GMT"), not any text Date.parse accepts.
  if (!/GMT|,/.test(text)) return null;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return null;
  return Math.max(0, Math.ceil((at - nowMs) / 1000));
}

/** At most ANSWER_BYTES of the body; what arrived before a failure (a bad gzip stream) is kept. */
async function firstBytes(response: Response): Promise<{ bytes: Buffer; unreadable: string | null }> {
  const reader = response.body?.getReader();
  if (!reader) return { bytes: Buffer.alloc(0), unreadable: null };
  const chunks: Uint8Array[] = [];
  let size = 0;
  let unreadable: string | null = null;
  try {
    while (size < ANSWER_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } catch (error) {
    unreadable = (error as Error).message ?? String(error);
  } finally {
    await reader.cancel().catch(() => {});
  }
  return { bytes: Buffer.concat(chunks).subarray(0, ANSWER_BYTES), unreadable };
}

async function answerOf(
  response: Response,
  redactor: Redactor,
): Promise<DestinationAnswer & { note: string }> {
  const { bytes, unreadable } = await firstBytes(response);
  const kept = redactor.bytes(bytes);
  const text = redactor.text(answerText(kept, response.headers.get('content-type')));
  const headers = redactor.text(headersText(response.headers));
  const note = unreadable === null ? '' : ` (the body could not be read on: ${unreadable})`;
  return { bytes: kept, text, headers, note };
}

function isRetryableStatus(status: number): boolean {
  return status >= 500 || status === 429 || status === 408;
}

/** POSTs once. Never throws: every ending is a DestinationSend, its texts storable. */
export async function sendToDestination(request: DestinationRequest): Promise<DestinationSend> {
  const sent = await postOnce(request);
  if (sent.outcome === 'delivered') return sent;
  return { ...sent, error: storableError(request.redactor.text(sent.error)) };
}

async function postOnce(request: DestinationRequest): Promise<DestinationSend> {
  const timeout = AbortSignal.timeout(request.timeoutMs);
  const signal = request.signal ? AbortSignal.any([timeout, request.signal]) : timeout;
  // Built apart from the send: what fetch refuses here (a header value, credentials in the URL)
  // it refuses on every attempt, so it is not a network failure to retry.
  let built: Request;
  try {
    built = new Request(request.url, {
      method: 'POST',
      headers: request.headers,
      body: request.body,
      signal,
      // A POST is not silently re-sent elsewhere: a 3xx is reported, not followed.
      redirect: 'manual',
    });
  } catch (error) {
    return {
      outcome: 'dead',
      status: null,
      error: `the request could not be built: ${(error as Error).message}`,
      answer: null,
    };
  }
  let response: Response;
  try {
    response = await fetch(built, request.dispatcher ? { dispatcher: request.dispatcher } : {});
  } catch (error) {
    // A refused address stays refused on every attempt: not retried.
    const refused = (error as { cause?: unknown }).cause;
    if (refused instanceof AddressRefusedError) {
      return { outcome: 'dead', status: null, error: `${refused.code}: ${refused.message}`, answer: null };
    }
    if (timeout.aborted) {
      return {
        outcome: 'retry',
        status: null,
        error: `timed out after ${request.timeoutMs} ms`,
        answer: null,
      };
    }
    if (request.signal?.aborted) {
      return { outcome: 'retry', status: null, error: 'aborted: the relay stopped', answer: null };
    }
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    const detail = cause?.code ?? cause?.message ?? (error as Error).message;
    return { outcome: 'retry', status: null, error: `request failed: ${detail}`, answer: null };
  }
  if (response.status >= 200 && response.status < 300) {
    await response.body?.cancel().catch(() => {});
    return { outcome: 'delivered', status: response.status };
  }
  const { note, ...answer } = await answerOf(response, request.redactor);
  const error = `HTTP ${response.status}${answer.text ? `: ${answer.text}` : ''}${note}`;
  if (isRetryableStatus(response.status)) {
    const after =
      response.status === 429 || response.status === 503
        ? retryAfterSecondsOf(response.headers.get('retry-after'), request.nowMs ?? Date.now())
        : null;
    return {
      outcome: 'retry',
      status: response.status,
      error,
      answer,
      ...(after === null ? {} : { retryAfterSeconds: after }),
    };
  }
  return { outcome: 'dead', status: response.status, error, answer };
}
