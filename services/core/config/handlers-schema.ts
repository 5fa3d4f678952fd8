import { z } from 'zod';
import { isJsonPointer } from '../providers/json-pointer.ts';
import { DESTINATION_NAME } from './destinations-schema.ts';
import { durationMs } from './duration.ts';

// The options of the built-in handlers (`options:` of an endpoint), checked at load with the rest
// of the configuration (handler-kinds.ts) and again by each handler when it is built.

/** The record handler takes no options: the inbox row is the product. */
export const recordOptionsSchema = z.strictObject({});

export const projectOptionsSchema = z.strictObject({
  /** Entity type used when the endpoint's extraction gives none. */
  entityType: z.string().min(1).max(200).default('entity'),
  /** JSON pointer into the verified payload naming the state to store; '' stores the whole body. */
  state: z.string().refine(isJsonPointer, 'must be a JSON pointer such as /data').default(''),
  /**
   * Event types allowed to create an entity. When set, any other event for an entity with no
   * state yet throws EntityNotYetKnown (retried, then `parked` until requeued), instead of
   * creating the entity from a partial update.
   */
  createOn: z.array(z.string().min(1)).min(1).optional(),
});

const httpUrl = z
  .string()
  .refine((text) => URL.canParse(text) && /^https?:$/.test(new URL(text).protocol), 'must be an http(s) URL');

export const billingOptionsSchema = z.strictObject({
  /** Secret key for re-fetching subscriptions. Without it subscription events fail (and go dead). */
  stripeApiKey: z.string().min(1, 'must not be empty').optional(),
  /** Base URL of the Stripe API; only scheme, host and port are used. */
  stripeApiBase: httpUrl
    .refine((text) => ['', '/'].includes(new URL(text).pathname), 'must not have a path (scheme://host:port)')
    .default('https://api.stripe.com'),
  /** Per-request timeout of a re-fetch (it runs inside the apply transaction). */
  stripeTimeout: durationMs.default(10_000),
  /**
   * One of the endpoint's destinations (with `routedBy: handler`): every invoice.paid event that
   * books a new ledger entry is routed to it, and no other event. Unset: none is.
   */
  notify: z.string().regex(DESTINATION_NAME, "must name one of the endpoint's destinations").optional(),
});

/** The sql handler takes no options: the statement is the whole configuration. */
export const sqlOptionsSchema = z.strictObject({});
