/**
 * An interruptible sleep for the worker's loops: a wake-up for an endpoint ends its loops'
 * sleeps, wakeAll() (stop) ends all.
 *
 * A wake-up that finds none of the endpoint's loops asleep (they are all busy applying) is kept
 * for the next of them to sleep, which then does not sleep at all. Otherwise events committed
 * while every loop was busy would wait for the polling interval whenever their wake-up came
 * during a batch, and the gateway sends fewer wake-ups under load (claim.wakeupInterval).
 */
export class Waker {
  #sleepers = new Map<() => void, string>();
  /** Endpoints woken while none of their loops slept. */
  #owed = new Set<string>();

  sleep(ms: number, endpoint = ''): Promise<void> {
    if (endpoint !== '' && this.#owed.delete(endpoint)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#sleepers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#sleepers.set(done, endpoint);
    });
  }

  wake(endpoint: string): void {
    let woken = false;
    for (const [wake, sleeping] of [...this.#sleepers]) {
      if (sleeping !== endpoint) continue;
      wake();
      woken = true;
    }
    if (!woken) this.#owed.add(endpoint);
  }

  wakeAll(): void {
    for (const wake of [...this.#sleepers.keys()]) wake();
  }
}
