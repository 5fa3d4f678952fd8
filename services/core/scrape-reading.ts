/**
 * A database reading shared by the gauges that scrape it: at most one query per process per
 * `cacheMs` however many Prometheus servers scrape, concurrent scrapes share the query in flight,
 * and a failed query serves the last reading (or `empty`) rather than failing the whole scrape.
 */
export interface ScrapeReadingOptions<T> {
  readonly cacheMs: number;
  /** What a scrape reports before any reading succeeded. */
  readonly empty: T;
  readonly now?: () => number;
  readonly onError?: ((error: Error) => void) | undefined;
}

export function scrapeReading<T>(
  query: () => Promise<T>,
  options: ScrapeReadingOptions<T>,
): () => Promise<T> {
  const now = options.now ?? Date.now;
  let reading: { at: number; value: T } | null = null;
  let inFlight: Promise<T> | null = null;
  return async () => {
    if (reading && now() - reading.at < options.cacheMs) return reading.value;
    inFlight ??= query()
      .then((value) => {
        reading = { at: now(), value };
        return value;
      })
      .finally(() => {
        inFlight = null;
      });
    try {
      return await inFlight;
    } catch (error) {
      options.onError?.(error as Error);
      return reading?.value ?? options.empty;
    }
  };
}
