import { Octokit } from '@octokit/rest';
import { HookgateError } from '../errors.ts';
import { type RetryOptions, retryAfterMs, withRateLimitRetries } from './rate-limit.ts';
import type { FetchedEvent, ReplaySource, ReplayWindow } from './types.ts';

export interface GithubReplaySettings {
  readonly token: string;
  /** `https://api.github.com` or a local fake. */
  readonly apiBase: string;
  /** `owner/repo` of the webhook. */
  readonly repository: string;
  readonly hookId: number;
  readonly pageSize?: number;
  readonly retry?: RetryOptions;
}

interface ErrorWithResponse {
  readonly status?: number;
  readonly response?: { readonly headers?: Record<string, string | number | undefined> };
}

/** GitHub answers a rate limit with 429, or 403 with x-ratelimit-remaining: 0. */
function rateLimited(error: unknown) {
  const { status, response } = (error ?? {}) as ErrorWithResponse;
  const headers = response?.headers ?? {};
  const exhausted = status === 403 && String(headers['x-ratelimit-remaining']) === '0';
  if (status !== 429 && !exhausted) return null;
  const after = retryAfterMs(headers['retry-after'] === undefined ? null : String(headers['retry-after']));
  if (after !== null) return { waitMs: after };
  const reset = Number(headers['x-ratelimit-reset']);
  return { waitMs: Number.isFinite(reset) && reset > 0 ? Math.max(0, reset * 1000 - Date.now()) : 0 };
}

/** The `cursor` of the Link header's rel="next", if any. */
export function nextCursor(link: string | undefined): string | null {
  const next = link?.split(',').find((part) => /rel="next"/.test(part));
  const url = next ? /<([^>]+)>/.exec(next)?.[1] : undefined;
  return url ? new URL(url).searchParams.get('cursor') : null;
}

const lowerCase = (headers: Record<string, unknown>): Record<string, string> =>
  Object.fromEntries(
    Object.entries(headers)
      .filter(([, value]) => typeof value === 'string')
      .map(([name, value]) => [name.toLowerCase(), value as string]),
  );

/**
 * A repository webhook's recent deliveries (newest first, paged by cursor), then each delivery's
 * request (headers and payload) through the official `@octokit/rest` client. Deliveries of the
 * same event (redeliveries) share a GUID, the X-GitHub-Delivery id: the claim absorbs them.
 */
export function githubReplaySource(settings: GithubReplaySettings): ReplaySource {
  const octokit = new Octokit({ auth: settings.token, baseUrl: settings.apiBase.replace(/\/$/, '') });
  const [owner, repo] = settings.repository.split('/') as [string, string];
  const call = <T>(what: string, request: () => Promise<T>) =>
    withRateLimitRetries(what, request, rateLimited, settings.retry).catch((error: unknown) => {
      if (error instanceof HookgateError) throw error;
      throw new HookgateError(
        'replay_fetch_failed',
        `${what} at ${settings.apiBase} failed: ${(error as Error).message}`,
        { cause: error },
      );
    });
  return {
    description: `GitHub deliveries of hook ${settings.hookId} on ${settings.repository} at ${settings.apiBase}`,
    async *pages(window: ReplayWindow) {
      let cursor: string | null = null;
      for (;;) {
        const list = await call('GitHub list webhook deliveries', () =>
          octokit.rest.repos.listWebhookDeliveries({
            owner,
            repo,
            hook_id: settings.hookId,
            per_page: settings.pageSize ?? 100,
            ...(cursor ? { cursor } : {}),
          }),
        );
        let older = false;
        const events: FetchedEvent[] = [];
        for (const delivery of list.data) {
          const at = new Date(delivery.delivered_at).getTime();
          if (at < window.since.getTime()) {
            older = true;
            continue;
          }
          if (at >= window.until.getTime()) continue;
          const detail = await call('GitHub get webhook delivery', () =>
            octokit.rest.repos.getWebhookDelivery({
              owner,
              repo,
              hook_id: settings.hookId,
              delivery_id: delivery.id,
            }),
          );
          const request = detail.data.request;
          events.push({
            body: JSON.stringify(request.payload ?? {}),
            headers: lowerCase((request.headers ?? {}) as Record<string, unknown>),
          });
        }
        yield events;
        // Newest first: once a page reaches before the window, later pages are older still.
        cursor = nextCursor(list.headers.link);
        if (older || !cursor) return;
      }
    },
  };
}
