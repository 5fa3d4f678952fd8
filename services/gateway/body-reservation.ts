import type { BodyBudget } from './body-budget.ts';

// A delivery's share of the gateway's body budget (body-budget.ts). Reserved before the body is
// read — a declared length up front, a chunked body as it comes — and given back once both the
// answer is out (or the client gone) and the delivery's work is done: a client that leaves
// while its claim waits does not take its body out of the claim queue.

export interface BodyReservation {
  /** For readBody: reserves a chunked body's bytes as they arrive (false: over budget). */
  readonly grow: ((bytes: number) => boolean) | undefined;
  /**
   * Called once by each of the two holders, the response (on close) and the delivery (when its
   * claim is done); the second call gives the bytes back.
   */
  letGo(): void;
}

const NOTHING: BodyReservation = { grow: undefined, letGo: () => {} };

/**
 * Reserves a delivery's body, or returns null when the declared length does not fit (refuse it
 * before reading). A declared length over the endpoint's limit reserves nothing: readBody
 * refuses that body without holding it. `onChange` is told the budget's bytes held after each
 * change (the gauge).
 */
export function reserveBody(
  budget: BodyBudget | undefined,
  contentLength: string | undefined,
  bodyLimit: number,
  onChange: (held: number) => void,
): BodyReservation | null {
  if (!budget) return NOTHING;
  let held = 0;
  let grow: ((bytes: number) => boolean) | undefined;
  const declared = Number(contentLength ?? Number.NaN);
  if (Number.isFinite(declared) && declared >= 0) {
    if (declared <= bodyLimit) {
      if (!budget.reserve(declared)) return null;
      held = declared;
      onChange(budget.held);
    }
  } else {
    grow = (bytes) => {
      if (!budget.reserve(bytes)) return false;
      held += bytes;
      onChange(budget.held);
      return true;
    };
  }
  let holders = 2;
  return {
    grow,
    letGo() {
      holders -= 1;
      if (holders > 0 || held === 0) return;
      budget.release(held);
      held = 0;
      onChange(budget.held);
    },
  };
}
