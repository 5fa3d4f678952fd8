import type { HeaderBag, ReplyContent } from '../core/providers/types.ts';
import type { Endpoint } from './endpoints.ts';
import type { Answer } from './receive.ts';

/**
 * Providers' questions, answered as each requires and never stored: the signed ones (Slack's
 * URL verification, Zoom's URL validation, Discord's PING, Twitch's callback verification,
 * Xero's intent to receive, Asana's heartbeat) come back from identify after verification; the
 * unsigned ones (Asana's X-Hook-Secret handshake, Dropbox's and Okta's GET challenges) are
 * asked of the provider before it, and reflect only what the request carried.
 */
export function replyAnswer(reply: ReplyContent): Answer {
  return {
    status: reply.status,
    outcome: 'replied',
    body: reply.body,
    ...(reply.text === undefined ? {} : { text: reply.text }),
    ...(reply.headers === undefined ? {} : { headers: reply.headers }),
    ...(reply.kind === undefined && reply.log === undefined
      ? {}
      : { note: { ...(reply.kind === undefined ? {} : { handshake: reply.kind }), ...reply.log } }),
  };
}

/** The answer to an unsigned handshake, or null when the request is not one of the endpoint's provider's. */
export function handshakeAnswer(
  endpoint: Endpoint,
  method: string,
  headers: HeaderBag,
  query: string,
): Answer | null {
  const reply = endpoint.provider.handshake?.({ method, headers, query });
  return reply ? replyAnswer(reply) : null;
}

/** Whether the endpoint's provider asks questions with this method (GET for Dropbox and Okta). */
export function answersMethod(endpoint: Endpoint | undefined, method: string): endpoint is Endpoint {
  return endpoint?.provider.handshakeMethods?.includes(method) === true;
}
