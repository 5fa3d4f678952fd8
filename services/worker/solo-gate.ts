// A worker process that dies takes every job it holds with it, and each of them is charged an
// attempt. An event a worker already died applying on its own (a suspect) therefore runs only
// when the process holds nothing else: no other loop is inside a step (fetching or applying),
// and none starts one until the suspect is done. Its crash then costs no neighbour an attempt.

type Apply<U> = () => Promise<U>;

/** What a step is given to run a suspect with nothing else in flight in the process. */
export type Solo = <U>(apply: Apply<U>) => Promise<U>;

export class SoloGate {
  /** Steps running in shared mode (a step that called `solo` has left it). */
  #shared = 0;
  #soloRunning = false;
  #soloWaiting = 0;
  #waiters: (() => void)[] = [];

  /**
   * Runs one fetch-and-apply step in shared mode: it waits while a suspect runs or waits to run,
   * so nothing is fetched that a suspect's crash could take down.
   */
  async step<T>(work: (solo: Solo) => Promise<T>): Promise<T> {
    await this.#until(() => {
      if (this.#soloRunning || this.#soloWaiting > 0) return false;
      this.#shared += 1;
      return true;
    });
    let inShared = true;
    const leaveShared = () => {
      if (!inShared) return;
      inShared = false;
      this.#shared -= 1;
      this.#notify();
    };
    const solo: Solo = async (apply) => {
      // The step's own other work is done by now (suspects run last); it stops counting as
      // shared, or two steps each waiting for the other to leave would wait for ever.
      leaveShared();
      this.#soloWaiting += 1;
      await this.#until(() => {
        if (this.#soloRunning || this.#shared > 0) return false;
        this.#soloRunning = true;
        return true;
      });
      this.#soloWaiting -= 1;
      try {
        return await apply();
      } finally {
        this.#soloRunning = false;
        this.#notify();
      }
    };
    try {
      return await work(solo);
    } finally {
      leaveShared();
    }
  }

  /** Waits until `claim` succeeds; it checks and takes its turn in one synchronous step. */
  async #until(claim: () => boolean): Promise<void> {
    while (!claim()) {
      await new Promise<void>((resolve) => {
        this.#waiters.push(resolve);
      });
    }
  }

  #notify(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }
}
