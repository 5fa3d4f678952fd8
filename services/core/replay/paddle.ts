import { HookgateError } from '../errors.ts';
import { type RetryOptions, retryAfterMs, withRateLimitRetries } from './rate-limit.ts';
import type { FetchedEvent, PageHooks, ReplaySource, ReplayWindow } from './types.ts';

export interface PaddleReplaySettings {
  readonly apiKey: string;
  /** `https://api.paddle.com` (`https://sandbox-api.paddle.com` for a sandbox) or a local fake. */
  readonly apiBase: string;
  readonly pageSize?: number;
  readonly retry?: RetryOptions;
  readonly timeoutMs?: number;
}

/** An event entity as Paddle's API returns it: the webhook body without its notification_id. */
interface PaddleEvent {
  readonly event_id: string;
  readonly occurred_at: string;
}

interface PaddleList {
  readonly data: readonly PaddleEvent[];
  readonly meta?: { readonly pagination?: { readonly has_more?: boolean } };
}

/** A non-2xx answer from Paddle's API, with what a rate limit needs. */
class PaddleAnswer extends Error {
  readonly status: number;
  readonly retryAfter: string | null;

  constructor(status: number, retryAfter: string | null, message: string) {
    super(message);
    this.status = status;
    this.retryAfter = retryAfter;
  }
}

function rateLimited(error: unknown) {
  if (!(error instanceof PaddleAnswer) || error.status !== 429) return null;
  return { waitMs: retryAfterMs(error.retryAfter) ?? 0 };
}

/**
 * Paddle Billing's `GET /events`, newest first (`order_by=id[DESC]`: Paddle's ids sort by
 * creation), 200 per page, by `after` (the last id) while `meta.pagination.has_more`, until a page
 * reaches before the window (the API has no time filter). Read with plain HTTP rather than Paddle's SDK,
 * which turns the entity into camel-cased objects: the JSON the API returns is the webhook's body.
 * Paddle's listing says nothing about deliveries (its notifications API does), so no delivery
 * failures are counted.
 */
export function paddleReplaySource(settings: PaddleReplaySettings): ReplaySource {
  const base = new URL(settings.apiBase);
  const first = new URL('/events', base);
  first.searchParams.set('order_by', 'id[DESC]');
  first.searchParams.set('per_page', String(settings.pageSize ?? 200));
  const get = async (url: URL): Promise<PaddleList> => {
    const answer = await fetch(url, {
      headers: { authorization: `Bearer ${settings.apiKey}`, accept: 'application/json' },
      signal: AbortSignal.timeout(settings.timeoutMs ?? 30_000),
    });
    const text = await answer.text();
    if (!answer.ok) {
      const detail = /"detail"\s*:\s*"([^"]{0,200})"/.exec(text)?.[1] ?? text.slice(0, 200);
      throw new PaddleAnswer(answer.status, answer.headers.get('retry-after'), `${answer.status} ${detail}`);
    }
    return JSON.parse(text) as PaddleList;
  };
  return {
    description: `Paddle events at ${base.origin}`,
    filtersByTime: false,
    async *pages(window: ReplayWindow, hooks: PageHooks = {}) {
      let url = first;
      for (;;) {
        const page = url;
        const list = await withRateLimitRetries(
          'Paddle list events',
          () => {
            hooks.beforeRequest?.();
            return get(page);
          },
          rateLimited,
          settings.retry,
        ).catch((error: unknown) => {
          if (error instanceof HookgateError) throw error;
          throw new HookgateError(
            'replay_fetch_failed',
            `Paddle list events at ${base.origin} failed: ${(error as Error).message}`,
            { cause: error },
          );
        });
        let older = false;
        const events: FetchedEvent[] = [];
        for (const event of list.data) {
          const at = Date.parse(event.occurred_at);
          if (at < window.since.getTime()) older = true;
          else if (at < window.until.getTime()) events.push({ body: JSON.stringify(event), headers: {} });
        }
        yield { events, known: 0, deliveryFailures: 0 };
        const last = list.data.at(-1);
        if (older || !list.meta?.pagination?.has_more || !last) return;
        // The next page from our own query and the last id, rather than the answer's `next`
        // link: the order and page size stay ours, and the key goes to Paddle's origin only.
        url = new URL(first);
        url.searchParams.set('after', last.event_id);
      }
    },
  };
}
