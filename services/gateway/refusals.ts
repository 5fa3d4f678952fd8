import type { Endpoint } from './endpoints.ts';
import { type Answer, refuse } from './receive.ts';

// The gateway's refusals that come from the request rather than from verifying or claiming it:
// over budget, no such endpoint, and a body that could not be read.

/** Refused before its body is read: the gateway holds as many body bytes as it may. */
export const overloaded = (): Answer =>
  refuse(
    'overloaded',
    'Too many deliveries are waiting to be stored; this one was not accepted. Retry later.',
  );

export const endpointUnknown = (): Answer =>
  refuse('endpoint_unknown', 'No endpoint with that name is configured.');

/** A delivery the client gave up on: nobody is left to answer, but it is counted. */
export const CLIENT_ABORTED = 'client_aborted';

/** What a failure to read a body (readBody's or Express's) comes to. */
export type BodyFailure =
  /** Answer this, closing the connection when `close`. */
  | {
      readonly kind: 'answer';
      readonly answer: Answer;
      readonly close: boolean;
      readonly endpoint: Endpoint | undefined;
    }
  /** The client left (or was answered 408 already): count it only. */
  | { readonly kind: 'aborted' }
  /** Not a body problem at all: logged as unexpected and answered 503. */
  | { readonly kind: 'unexpected'; readonly answer: Answer };

export function bodyFailure(
  error: { type?: string; status?: number } | URIError,
  endpoint: Endpoint | undefined,
): BodyFailure {
  const type = 'type' in error ? error.type : undefined;
  const status = 'status' in error ? error.status : undefined;
  const answer = (result: Answer, close: boolean, to = endpoint): BodyFailure => ({
    kind: 'answer',
    answer: result,
    close,
    endpoint: to,
  });
  if (type === 'entity.too.large' && endpoint)
    return answer(
      refuse('body_too_large', `The body exceeds this endpoint's limit of ${endpoint.bodyLimit} bytes.`),
      true,
    );
  if (type === 'encoding.unsupported')
    return answer(
      refuse('encoding_unsupported', 'Compressed bodies are not accepted; send the body as signed.'),
      true,
    );
  if (type === 'budget.exceeded') return answer(overloaded(), true);
  if (type === 'request.aborted') return { kind: 'aborted' };
  // `/webhooks/%zz`: a name that cannot be decoded names no endpoint.
  if (error instanceof URIError || (endpoint === undefined && status === 400))
    return answer(endpointUnknown(), false, undefined);
  if (status && status < 500)
    return answer(refuse('body_unreadable', 'The request body could not be read.'), true);
  return {
    kind: 'unexpected',
    answer: refuse('database_unavailable', 'The delivery could not be processed; retry.'),
  };
}
