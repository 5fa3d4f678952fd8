export interface GroupCommitOptions<In, Out> {
  /** Most items handed to one `commit` call. */
  readonly maxBatch: number;
  /** Longest the oldest waiting item waits for company while a commit slot is free. */
  readonly maxWaitMs: number;
  /** `commit` calls that may run at once. */
  readonly concurrency: number;
  /** Commits a batch; returns one result per item, in order. Must not throw. */
  readonly commit: (items: readonly In[]) => Promise<readonly Out[]>;
  /** Most items waiting for a batch; beyond it `submit` refuses at once (load shedding). */
  readonly maxQueued?: number;
  /** An item that waited longer than this for a batch is refused instead of committed. */
  readonly maxQueueAgeMs?: number;
  /** Told the number of items in every batch, for metrics. */
  readonly onBatch?: (size: number) => void;
  /** What an item weighs (the gateway: its body's bytes), for maxBatchSize. */
  readonly size?: (item: In) => number;
  /**
   * Most weight in one batch: a batch closes before the next item would take it past this, and
   * leaves at once when the items waiting reach it. An item heavier than this goes by itself.
   */
  readonly maxBatchSize?: number;
  /**
   * Items that must be committed on their own (sync-mode claims, whose handler failure must
   * roll back only them). They wait in the same queue, under the same bounds and commit slots,
   * but form batches of one, and leave as soon as a slot is free.
   */
  readonly alone?: (item: In) => boolean;
}

/**
 * Refused before reaching the database: the queue was full, or the item waited too long for a
 * batch (its caller is likely gone). Nothing was committed for it.
 */
export class GroupCommitOverloaded extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GroupCommitOverloaded';
  }
}

interface Waiting<In, Out> {
  readonly item: In;
  readonly size: number;
  readonly since: number;
  readonly resolve: (out: Out) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Group commit: callers submit one item and await its own result, while items arriving
 * close together share one transaction. A batch leaves when it is full, when its oldest item
 * has waited `maxWaitMs`, or, if every slot was busy, as soon as a slot frees up — so under
 * load batches grow by themselves and at rest a lone item waits at most `maxWaitMs`.
 */
export class GroupCommitter<In, Out> {
  readonly #options: GroupCommitOptions<In, Out>;
  #queue: Waiting<In, Out>[] = [];
  #inFlight = 0;
  #timer: NodeJS.Timeout | undefined;
  #due = false;
  #idle: (() => void)[] = [];
  /** Items waiting that must be committed alone. */
  #aloneWaiting = 0;
  /** What the waiting items weigh together (options.size). */
  #queuedSize = 0;

  constructor(options: GroupCommitOptions<In, Out>) {
    this.#options = options;
  }

  submit(item: In): Promise<Out> {
    const limit = this.#options.maxQueued;
    if (limit !== undefined && this.#queue.length >= limit) {
      return Promise.reject(
        new GroupCommitOverloaded(`${limit} deliveries are already waiting for a claim transaction.`),
      );
    }
    const size = this.#options.size?.(item) ?? 0;
    return new Promise<Out>((resolve, reject) => {
      this.#queue.push({ item, size, resolve, reject, since: performance.now() });
      this.#queuedSize += size;
      // A lone item gains nothing by waiting for company.
      if (this.#options.alone?.(item)) {
        this.#aloneWaiting += 1;
        this.#due = true;
      }
      if (this.#full()) this.#due = true;
      else if (this.#queue.length === 1 && !this.#timer) this.#arm();
      this.#pump();
    });
  }

  /** Resolves once nothing is waiting or committing (for graceful shutdown). */
  async drain(): Promise<void> {
    if (this.#queue.length === 0 && this.#inFlight === 0) return;
    this.#due = true;
    this.#pump();
    await new Promise<void>((resolve) => this.#idle.push(resolve));
  }

  #arm(): void {
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#due = true;
      this.#pump();
    }, this.#options.maxWaitMs);
  }

  #pump(): void {
    while (this.#due && this.#queue.length > 0 && this.#inFlight < this.#options.concurrency) {
      const batch = this.#withoutStale(this.#take());
      if (batch.length === 0) continue;
      this.#due = this.#full() || this.#aloneWaiting > 0;
      if (this.#queue.length === 0 && this.#timer) {
        clearTimeout(this.#timer);
        this.#timer = undefined;
      }
      void this.#run(batch);
    }
    if (this.#queue.length > 0 && !this.#timer && !this.#due) this.#arm();
    if (this.#queue.length === 0 && this.#inFlight === 0) {
      for (const resolve of this.#idle.splice(0)) resolve();
    }
  }

  /** Whether the waiting items make a whole batch, by count or by weight. */
  #full(): boolean {
    const maxSize = this.#options.maxBatchSize;
    return (
      this.#queue.length >= this.#options.maxBatch || (maxSize !== undefined && this.#queuedSize >= maxSize)
    );
  }

  /**
   * The next batch: a lone item by itself, else others in arrival order, up to maxBatch items
   * and maxBatchSize of weight (at least one item, whatever it weighs).
   */
  #take(): Waiting<In, Out>[] {
    const alone = this.#options.alone;
    if (alone && this.#aloneWaiting > 0 && alone(this.#queue[0]!.item)) {
      this.#aloneWaiting -= 1;
      return this.#withdraw([this.#queue.shift()!]);
    }
    const maxSize = this.#options.maxBatchSize ?? Number.POSITIVE_INFINITY;
    if (!alone || this.#aloneWaiting === 0) {
      let count = 0;
      let size = 0;
      for (const waiting of this.#queue) {
        if (count >= this.#options.maxBatch || (count > 0 && size + waiting.size > maxSize)) break;
        count += 1;
        size += waiting.size;
      }
      return this.#withdraw(this.#queue.splice(0, count));
    }
    const batch: Waiting<In, Out>[] = [];
    const rest: Waiting<In, Out>[] = [];
    let size = 0;
    let closed = false;
    for (const waiting of this.#queue) {
      if (closed || alone(waiting.item)) {
        rest.push(waiting);
        continue;
      }
      if (batch.length > 0 && size + waiting.size > maxSize) {
        // In arrival order: the batch ends here, lighter items behind it wait their turn.
        closed = true;
        rest.push(waiting);
        continue;
      }
      batch.push(waiting);
      size += waiting.size;
      closed = batch.length >= this.#options.maxBatch;
    }
    this.#queue = rest;
    return this.#withdraw(batch);
  }

  #withdraw(batch: Waiting<In, Out>[]): Waiting<In, Out>[] {
    for (const waiting of batch) this.#queuedSize -= waiting.size;
    return batch;
  }

  /** Refuses items that waited longer than maxQueueAgeMs; returns the rest. */
  #withoutStale(batch: Waiting<In, Out>[]): Waiting<In, Out>[] {
    const maxAge = this.#options.maxQueueAgeMs;
    if (maxAge === undefined) return batch;
    const now = performance.now();
    return batch.filter((waiting) => {
      if (now - waiting.since <= maxAge) return true;
      waiting.reject(new GroupCommitOverloaded(`waited over ${maxAge} ms for a claim transaction`));
      return false;
    });
  }

  async #run(batch: Waiting<In, Out>[]): Promise<void> {
    this.#inFlight += 1;
    this.#options.onBatch?.(batch.length);
    try {
      const results = await this.#options.commit(batch.map((waiting) => waiting.item));
      batch.forEach((waiting, index) => {
        waiting.resolve(results[index] as Out);
      });
    } catch (error) {
      for (const waiting of batch) waiting.reject(error);
    } finally {
      this.#inFlight -= 1;
      // Items that queued while every slot was busy have waited long enough.
      if (this.#queue.length > 0) this.#due = true;
      this.#pump();
      if (this.#queue.length === 0 && this.#inFlight === 0) {
        for (const resolve of this.#idle.splice(0)) resolve();
      }
    }
  }
}
