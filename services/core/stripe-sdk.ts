import type Stripe from 'stripe';

// The `stripe` package is some 200 modules: loaded the first time a Stripe API call is made (the
// stripe-billing handler's refetch, `replay`, `reconcile`), never at start, so that a gateway, and
// a worker whose handlers make no Stripe call, start without it.

let loading: Promise<typeof Stripe> | undefined;

export function loadStripe(): Promise<typeof Stripe> {
  loading ??= import('stripe').then((module) => module.default);
  return loading;
}

/** The client options both callers share, pointed at `apiBase` (Stripe's or a local fake). */
export function stripeEndpoint(apiBase: string) {
  const base = new URL(apiBase);
  return {
    protocol: base.protocol === 'http:' ? ('http' as const) : ('https' as const),
    host: base.hostname,
    port: base.port || (base.protocol === 'http:' ? 80 : 443),
    telemetry: false,
  };
}
