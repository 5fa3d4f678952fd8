import type Stripe from 'stripe';
import { HookgateError } from '../errors.ts';
import { loadStripe, stripeEndpoint } from '../stripe-sdk.ts';

export interface StripeApiSettings {
  readonly apiKey: string;
  /** e.g. `https://api.stripe.com` (the default) or `http://127.0.0.1:12111` for a fake. */
  readonly apiBase: string;
  readonly timeoutMs: number;
}

/** The subscription as the API returned it, or `null` when the API says it does not exist. */
export type FetchedSubscription = { readonly id: string; readonly [field: string]: unknown } | null;

export interface SubscriptionSource {
  retrieve(id: string): Promise<FetchedSubscription>;
}

/**
 * Reads subscriptions through the official `stripe` client pointed at `apiBase`. Network
 * retries are left to the job queue (maxNetworkRetries 0): the call runs inside the apply
 * transaction, which should not be held open by hidden retry loops.
 */
export function createSubscriptionSource(settings: StripeApiSettings): SubscriptionSource {
  let client: Promise<{ Stripe: typeof Stripe; stripe: Stripe }> | undefined;
  const connect = () => {
    client ??= loadStripe().then((StripeClient) => ({
      Stripe: StripeClient,
      stripe: new StripeClient(settings.apiKey, {
        ...stripeEndpoint(settings.apiBase),
        timeout: settings.timeoutMs,
        maxNetworkRetries: 0,
      }),
    }));
    return client;
  };
  return {
    async retrieve(id) {
      const { Stripe, stripe } = await connect();
      try {
        const subscription = await stripe.subscriptions.retrieve(id);
        // Plain JSON: drops the client's non-enumerable response metadata.
        const data = JSON.parse(JSON.stringify(subscription)) as { id: string; deleted?: unknown };
        return data.deleted === true ? null : data;
      } catch (error) {
        if (error instanceof Stripe.errors.StripeError && error.statusCode === 404) return null;
        const status =
          error instanceof Stripe.errors.StripeError && error.statusCode ? ` (HTTP ${error.statusCode})` : '';
        throw new HookgateError(
          'stripe_refetch_failed',
          `Fetching subscription ${id} from ${settings.apiBase} failed${status}: ${(error as Error).message}`,
          { cause: error },
        );
      }
    },
  };
}
