import type { HeaderBag } from '../providers/types.ts';

/** One event as the provider's API gives it back: the body it delivered and its headers. */
export interface FetchedEvent {
  /** The webhook body, as JSON text. */
  readonly body: string;
  /** Lower-case header names, as the gateway sees them. */
  readonly headers: HeaderBag;
}

export interface ReplayWindow {
  readonly since: Date;
  readonly until: Date;
}

/** One page of a listing: the events read back, and what the listing said beside them. */
export interface FetchedPage {
  readonly events: readonly FetchedEvent[];
  /**
   * Listed in the window but not read back, because `known` said the inbox has their id
   * (GitHub: the delivery's GUID is the event id, so its request need not be fetched).
   */
  readonly known: number;
  /**
   * Listed in the window with a failed delivery by the provider's own account (Stripe: the event
   * still has pending webhooks; GitHub: the delivery's status code was not 2xx).
   */
  readonly deliveryFailures: number;
}

/** What a reader of a listing may ask of it (reconciliation uses these; replay none). */
export interface PageHooks {
  /** Called before every request to the API (each attempt after a rate limit too); may throw to stop. */
  readonly beforeRequest?: () => void;
  /** Of these event ids, those the inbox already holds: their detail need not be fetched. */
  readonly known?: (eventIds: readonly string[]) => Promise<ReadonlySet<string>>;
}

/** A provider API that lists the events it sent in a window, a page at a time. */
export interface ReplaySource {
  /** e.g. `Stripe events.list at https://api.stripe.com`. */
  readonly description: string;
  /**
   * True when the API filters by time (Stripe's `created`), so a window costs only its own pages;
   * false when every listing starts at the newest (GitHub's deliveries).
   */
  readonly filtersByTime: boolean;
  pages(window: ReplayWindow, hooks?: PageHooks): AsyncIterable<FetchedPage>;
}
