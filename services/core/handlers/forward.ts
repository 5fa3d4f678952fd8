import { z } from 'zod';
import { durationMs } from '../config/duration.ts';
import { parseHandlerOptions } from './handler-options.ts';
import type { HandlerDeps } from './index.ts';
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
 * the relay sends it with `Idempotency-Key: <endpoint>:<event_id>` and records the result.
 */
export function createForwardHandler(options: unknown, deps: HandlerDeps): Handler {
  const settings = parseHandlerOptions(forwardOptionsSchema, options, deps.endpoint);
  return {
    name: 'forward',
    async apply({ outbox }, event) {
      const key = `${event.endpoint}:${event.eventId}`;
      await outbox.enqueue({
        kind: 'forward',
        key,
        payload: {
          url: settings.url,
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
