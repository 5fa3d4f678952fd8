import { HookgateError } from '../errors.ts';
import type { BatchEventResult, Handler, InboxEvent } from './types.ts';

/**
 * The event type reserved for test deliveries (`hookgate send-test`, the chart's `helm test`).
 * Every handler settles such an event `ignored` without running: it proves the path from the
 * provider's signature to a settled inbox row and never writes a business table, whatever the
 * endpoint's handler. `stats` counts these events apart.
 */
export const TEST_EVENT_TYPE = 'hookgate.test';

export function isTestEvent(event: Pick<InboxEvent, 'eventType'>): boolean {
  return event.eventType === TEST_EVENT_TYPE;
}

/**
 * Wraps a handler so that test events never reach it (record, project, billing, forward, sql:,
 * module: alike): they settle `ignored`, with no statement run, no lock taken and no outbox
 * effect queued. The rest of a batch goes to the handler as it would without them.
 */
export function skippingTestEvents(handler: Handler): Handler {
  const { applyBatch, lockBatch } = handler;
  return {
    name: handler.name,
    async apply(context, event) {
      if (isTestEvent(event)) return 'ignored';
      return handler.apply(context, event);
    },
    ...(applyBatch
      ? {
          async applyBatch(context, events): Promise<readonly BatchEventResult[]> {
            if (!events.some(isTestEvent)) return applyBatch.call(handler, context, events);
            const real = events.filter((event) => !isTestEvent(event));
            const results = real.length > 0 ? [...(await applyBatch.call(handler, context, real))] : [];
            if (results.length !== real.length) {
              throw new HookgateError(
                'handler_batch_invalid',
                `applyBatch returned ${results.length} results for ${real.length} events`,
              );
            }
            return events.map((event) => (isTestEvent(event) ? 'ignored' : results.shift()));
          },
        }
      : {}),
    ...(lockBatch
      ? {
          async lockBatch(tx, events) {
            await lockBatch.call(
              handler,
              tx,
              events.filter((event) => !isTestEvent(event)),
            );
          },
        }
      : {}),
  };
}
