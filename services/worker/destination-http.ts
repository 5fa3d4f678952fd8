import { type Dispatcher, fetch, Request, type Response } from 'undici';
import { AddressRefusedError } from './guarded-dispatcher.ts';

// undici's own fetch, not Node's global one: a dispatcher of the undici package (the address
// guard, guarded-dispatcher.ts) works only with the fetch of the same version.

/** How one POST to a destination ended, classified for the relay's retry decision. */
export type SendResult =
  | { readonly outcome: 'delivered'; readonly status: number }
  /**
   * 5xx, 429, 408, a timeout or a network failure: retried with the destination's backoff, and
   * no sooner than `retryAfterSeconds` when a 429 or 503 said so (its Retry-After header).
   */
  | {
      readonly outcome: 'retry';
      readonly status: number | null;
      readonly error: string;
      readonly retryAfterSeconds?: number;
    }
  /**
   * Any other answer (other 4xx, an unfollowed 3xx), or a request that cannot be built (status
   * null): sending again cannot help.
   */
  | { readonly outcome: 'dead'; readonly status: number | null; readonly error: string };

export interface SendRequest {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | Buffer;
  readonly timeoutMs: number;
  /** Aborts the request when the relay stops. */
  readonly signal?: AbortSignal;
  /** Opens the connections (the address guard of relay.allowedDestinations); default: undici's. */
  readonly dispatcher?: Dispatcher;
}

const SNIPPET = 300;

/** Bytes of an error answer read at most: a receiver's huge (or endless) body is not read whole. */
const SNIPPET_BYTES = 4 * SNIPPET;

async function snippetOf(response: Response): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  try {
    while (bytes < SNIPPET_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      bytes += value.byteLength;
    }
  } catch {
    // What arrived before the failure is still worth showing.
  } finally {
    await reader.cancel().catch(() => {});
  }
  const text = Buffer.concat(chunks).subarray(0, SNIPPET_BYTES).toString('utf8');
  return text.length > SNIPPET ? `${text.slice(0, SNIPPET)}…` : text;
}

/**
 * Retry-After (RFC 9110): delay-seconds or an HTTP-date. Null when absent or unreadable; a date
 * in the past is 0.
 */
export function retryAfterSeconds(value: string | null, now = Date.now()): number | null {
  if (value === null) return null;
  const text = value.trim();
  if (/^\d{1,10}$/.test(text)) return Number(text);
  // Only the date forms HTTP uses (they contain a comma or "GMT"), not any text Date.parse accepts.
  if (!/GMT|,/.test(text)) return null;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return null;
  return Math.max(0, Math.ceil((at - now) / 1000));
}

function isRetryableStatus(status: number): boolean {
  return status >= 500 || status === 429 || status === 408;
}

/** POSTs once. Never throws: every ending is a SendResult. */
export async function postOnce(request: SendRequest): Promise<SendResult> {
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
    };
  }
  let response: Response;
  try {
    response = await fetch(built, request.dispatcher ? { dispatcher: request.dispatcher } : {});
  } catch (error) {
    // A refused address stays refused on every attempt: not retried.
    const refused = (error as { cause?: unknown }).cause;
    if (refused instanceof AddressRefusedError) {
      return { outcome: 'dead', status: null, error: `${refused.code}: ${refused.message}` };
    }
    if (timeout.aborted) {
      return { outcome: 'retry', status: null, error: `timed out after ${request.timeoutMs} ms` };
    }
    if (request.signal?.aborted) {
      return { outcome: 'retry', status: null, error: 'aborted: the relay stopped' };
    }
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    const detail = cause?.code ?? cause?.message ?? (error as Error).message;
    return { outcome: 'retry', status: null, error: `request failed: ${detail}` };
  }
  if (response.status >= 200 && response.status < 300) {
    await response.body?.cancel().catch(() => {});
    return { outcome: 'delivered', status: response.status };
  }
  const snippet = await snippetOf(response);
  const error = `HTTP ${response.status}${snippet ? `: ${snippet}` : ''}`;
  if (isRetryableStatus(response.status)) {
    const after =
      response.status === 429 || response.status === 503
        ? retryAfterSeconds(response.headers.get('retry-after'))
        : null;
    return {
      outcome: 'retry',
      status: response.status,
      error,
      ...(after === null ? {} : { retryAfterSeconds: after }),
    };
  }
  return { outcome: 'dead', status: response.status, error };
}
