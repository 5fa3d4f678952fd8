import type Stripe from 'stripe';
import { HookgateError } from '../errors.ts';
import { loadStripe, stripeEndpoint } from '../stripe-sdk.ts';
import { type RetryOptions, retryAfterMs, withRateLimitRetries } from './rate-limit.ts';
import type { FetchedEvent, PageHooks, ReplaySource, ReplayWindow } from './types.ts';

export interface StripeReplaySettings {
  readonly apiKey: string;
  /** `https://api.stripe.com` or a local fake. */
  readonly apiBase: string;
  readonly pageSize?: number;
  readonly retry?: RetryOptions;
}

function rateLimited(StripeClient: typeof Stripe, error: unknown) {
  if (!(error instanceof StripeClient.errors.StripeError) || error.statusCode !== 429) return null;
  const headers = (error.headers ?? {}) as Record<string, string | undefined>;
  return { waitMs: retryAfterMs(headers['retry-after']) ?? 0 };
}

/**
 * Stripe's `events.list` over `created` bounds, newest first, paged with `starting_after` while
 * `has_more`, through the official client. An event object is what Stripe's webhook body is.
 */
export function stripeReplaySource(settings: StripeReplaySettings): ReplaySource {
  const base = new URL(settings.apiBase);
  const limit = settings.pageSize ?? 100;
  return {
    description: `Stripe events.list at ${base.origin}`,
    filtersByTime: true,
    async *pages(window: ReplayWindow, hooks: PageHooks = {}) {
      const StripeClient = await loadStripe();
      const stripe = new StripeClient(settings.apiKey, {
        ...stripeEndpoint(settings.apiBase),
        timeout: 30_000,
        // Network errors and 5xx: the client's own retries. 429: waited out below.
        maxNetworkRetries: 2,
      });
      const created = {
        gte: Math.floor(window.since.getTime() / 1000),
        lt: Math.ceil(window.until.getTime() / 1000),
      };
      let startingAfter: string | undefined;
      for (;;) {
        const page = await withRateLimitRetries(
          'Stripe events.list',
          () => {
            hooks.beforeRequest?.();
            return stripe.events.list({
              created,
              limit,
              ...(startingAfter ? { starting_after: startingAfter } : {}),
            });
          },
          (error) => rateLimited(StripeClient, error),
          settings.retry,
        ).catch((error: unknown) => {
          if (error instanceof HookgateError) throw error;
          throw new HookgateError(
            'replay_fetch_failed',
            `Stripe events.list at ${base.origin} failed: ${(error as Error).message}`,
            { cause: error },
          );
        });
        const events: FetchedEvent[] = page.data.map((event) => ({
          body: JSON.stringify(event),
          headers: {},
        }));
        // Stripe keeps sending an event while any of its webhooks has not answered 2xx.
        const deliveryFailures = page.data.filter((event) => event.pending_webhooks > 0).length;
        yield { events, known: 0, deliveryFailures };
        const last = page.data.at(-1);
        if (!page.has_more || !last) return;
        startingAfter = last.id;
      }
    },
  };
}
