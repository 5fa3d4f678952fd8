/**
 * The request-body bytes a gateway holds at once: reserved from the declared length (or as a
 * chunked body arrives) until the delivery is answered and its claim is done with the body
 * (read, verified, waiting for a claim, being claimed). Bodies are read before any
 * signature can be checked, so without a bound any client could make the gateway hold
 * connections × the endpoints' body limits; and while PostgreSQL is slow, verified bodies pile up
 * in the claim queue. A delivery that does not fit is refused before its body is read.
 *
 * One delivery is always let in when nothing is held, whatever its size (the endpoint's body limit still
 * applies), so the gateway never refuses everything.
 */
export class BodyBudget {
  readonly #limit: number;
  #held = 0;

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Bytes held now. */
  get held(): number {
    return this.#held;
  }

  /** Takes `bytes` if they fit (or nothing is held); false leaves the budget unchanged. */
  reserve(bytes: number): boolean {
    if (this.#held > 0 && this.#held + bytes > this.#limit) return false;
    this.#held += bytes;
    return true;
  }

  release(bytes: number): void {
    this.#held -= bytes;
  }
}
