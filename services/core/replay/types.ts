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

/** A provider API that lists the events it sent in a window, a page at a time. */
export interface ReplaySource {
  /** e.g. `Stripe events.list at https://api.stripe.com`. */
  readonly description: string;
  pages(window: ReplayWindow): AsyncIterable<readonly FetchedEvent[]>;
}
