import { z } from 'zod';
import { durationMs } from '../config/duration.ts';
import { parseHandlerOptions } from './handler-options.ts';
import type { HandlerDeps } from './index.ts';
import { withUrlResolved } from './relay-url.ts';
import type { Handler } from './types.ts';

export const forwardOptionsSchema = z.strictObject({
  /** The downstream that receives each event as a JSON POST. */
  url: z
    .string({ error: 'is required: the downstream URL to POST events to' })
    .refine(
      (text) => URL.canParse(text) && /^https?:$/.test(new URL(text).protocol),
      'must be an http(s) URL',
    ),
  /** Per-request timeout; a timeout is retried like a 5xx. */
  timeout: durationMs.default(10_000),
});

/**
 * Queues each event for delivery downstream. The outbox job exists only if the apply commits;
 * the relay sends it with `Idempotency-Key: <endpoint>:<event_id>` and records the result. The
 * URL is queued as written in the config: the relay resolves its `${NAME}` references.
 */
export function createForwardHandler(
  options: unknown,
  deps: HandlerDeps,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Handler {
  const url = withUrlResolved(options, 'url', deps.endpoint, env);
  const settings = parseHandlerOptions(forwardOptionsSchema, url.options, deps.endpoint);
  const queuedUrl = url.asWritten ?? settings.url;
  return {
    name: 'forward',
    async apply({ outbox }, event) {
      const key = `${event.endpoint}:${event.eventId}`;
      await outbox.enqueue({
        kind: 'forward',
        key,
        payload: {
          url: queuedUrl,
          idempotencyKey: key,
          endpoint: event.endpoint,
          eventId: event.eventId,
          eventType: event.eventType,
          timeoutMs: settings.timeout,
          body: event.payload,
        },
      });
      return 'processed';
    },
  };
}
