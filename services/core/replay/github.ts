import { createAppAuth } from '@octokit/auth-app';
import { Octokit } from '@octokit/rest';
import { HookgateError } from '../errors.ts';
import { type RetryOptions, retryAfterMs, withRateLimitRetries } from './rate-limit.ts';
import type { FetchedEvent, PageHooks, ReplaySource, ReplayWindow } from './types.ts';

/** The webhook whose deliveries are read back: one of the three kinds GitHub keeps deliveries for. */
export type GithubWebhook =
  | { readonly kind: 'repository'; readonly repository: string; readonly hookId: number }
  | { readonly kind: 'organization'; readonly organization: string; readonly hookId: number }
  /** A GitHub App's webhook: its id (or client id) and its private key (PEM), which sign a JWT. */
  | { readonly kind: 'app'; readonly appId: number | string; readonly privateKey: string };

export interface GithubReplaySettings {
  /** A token that can read the webhook's deliveries (repository and organization webhooks). */
  readonly token?: string;
  /** `https://api.github.com` or a local fake. */
  readonly apiBase: string;
  readonly webhook: GithubWebhook;
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

/** One delivery in a list page, and the request a delivery's detail carries: what replay reads. */
interface DeliveryItem {
  readonly id: number | bigint;
  /** The X-GitHub-Delivery id: the event's id, shared by its redeliveries. */
  readonly guid: string;
  readonly delivered_at: string;
  /** The receiver's HTTP status (0 when GitHub could not connect). */
  readonly status_code: number;
}
interface DeliveryDetail {
  readonly request: {
    readonly headers: Record<string, unknown> | null;
    readonly payload: Record<string, unknown> | null;
  };
}
interface WebhookApi {
  readonly description: string;
  list(
    perPage: number,
    cursor: string | null,
  ): Promise<{ data: readonly DeliveryItem[]; link: string | undefined }>;
  get(deliveryId: number): Promise<DeliveryDetail>;
}

/** The three deliveries APIs, through the official `@octokit/rest` client. */
function webhookApi(settings: GithubReplaySettings): WebhookApi {
  const baseUrl = settings.apiBase.replace(/\/$/, '');
  const { webhook } = settings;
  const page = (cursor: string | null) => (cursor ? { cursor } : {});
  switch (webhook.kind) {
    case 'repository': {
      const octokit = new Octokit({ auth: settings.token, baseUrl });
      const [owner, repo] = webhook.repository.split('/') as [string, string];
      const hook = { owner, repo, hook_id: webhook.hookId };
      return {
        description: `hook ${webhook.hookId} on ${webhook.repository}`,
        list: async (perPage, cursor) => {
          const list = await octokit.rest.repos.listWebhookDeliveries({
            ...hook,
            per_page: perPage,
            ...page(cursor),
          });
          return { data: list.data, link: list.headers.link };
        },
        get: async (id) => (await octokit.rest.repos.getWebhookDelivery({ ...hook, delivery_id: id })).data,
      };
    }
    case 'organization': {
      const octokit = new Octokit({ auth: settings.token, baseUrl });
      const hook = { org: webhook.organization, hook_id: webhook.hookId };
      return {
        description: `hook ${webhook.hookId} of the organization ${webhook.organization}`,
        list: async (perPage, cursor) => {
          const list = await octokit.rest.orgs.listWebhookDeliveries({
            ...hook,
            per_page: perPage,
            ...page(cursor),
          });
          return { data: list.data, link: list.headers.link };
        },
        get: async (id) => (await octokit.rest.orgs.getWebhookDelivery({ ...hook, delivery_id: id })).data,
      };
    }
    case 'app': {
      // The App's own endpoints take a JWT signed with its private key, which auth-app makes
      // (and renews before its 10 minutes run out) for each request to them.
      const octokit = new Octokit({
        authStrategy: createAppAuth,
        auth: { appId: webhook.appId, privateKey: webhook.privateKey },
        baseUrl,
      });
      return {
        description: `the webhook of GitHub App ${webhook.appId}`,
        list: async (perPage, cursor) => {
          const list = await octokit.rest.apps.listWebhookDeliveries({ per_page: perPage, ...page(cursor) });
          return { data: list.data, link: list.headers.link };
        },
        get: async (id) => (await octokit.rest.apps.getWebhookDelivery({ delivery_id: id })).data,
      };
    }
  }
}

/**
 * A webhook's recent deliveries (newest first, paged by cursor), then each delivery's request
 * (headers and payload), for a repository webhook, an organization webhook or a GitHub App's
 * webhook. Deliveries of the same event (redeliveries) share a GUID, the X-GitHub-Delivery id:
 * the claim absorbs them.
 */
export function githubReplaySource(settings: GithubReplaySettings): ReplaySource {
  const api = webhookApi(settings);
  const call = <T>(what: string, request: () => Promise<T>, hooks: PageHooks) =>
    withRateLimitRetries(
      what,
      () => {
        hooks.beforeRequest?.();
        return request();
      },
      rateLimited,
      settings.retry,
    ).catch((error: unknown) => {
      if (error instanceof HookgateError) throw error;
      throw new HookgateError(
        'replay_fetch_failed',
        `${what} at ${settings.apiBase} failed: ${(error as Error).message}`,
        { cause: error },
      );
    });
  return {
    description: `GitHub deliveries of ${api.description} at ${settings.apiBase}`,
    filtersByTime: false,
    async *pages(window: ReplayWindow, hooks: PageHooks = {}) {
      let cursor: string | null = null;
      // With `known`, each GUID's request is fetched once per listing (redeliveries share it).
      const fetchedGuids = new Set<string>();
      for (;;) {
        const list = await call(
          'GitHub list webhook deliveries',
          () => api.list(settings.pageSize ?? 100, cursor),
          hooks,
        );
        let older = false;
        const inWindow = list.data.filter((delivery) => {
          const at = new Date(delivery.delivered_at).getTime();
          if (at < window.since.getTime()) older = true;
          return at >= window.since.getTime() && at < window.until.getTime();
        });
        const known = hooks.known
          ? await hooks.known([...new Set(inWindow.map((delivery) => delivery.guid))])
          : new Set<string>();
        let skipped = 0;
        const deliveryFailures = inWindow.filter(
          (delivery) => delivery.status_code < 200 || delivery.status_code > 299,
        ).length;
        const events: FetchedEvent[] = [];
        for (const delivery of inWindow) {
          if (hooks.known && (known.has(delivery.guid) || fetchedGuids.has(delivery.guid))) {
            skipped += 1;
            continue;
          }
          fetchedGuids.add(delivery.guid);
          const detail = await call('GitHub get webhook delivery', () => api.get(Number(delivery.id)), hooks);
          const request = detail.request;
          events.push({
            body: JSON.stringify(request.payload ?? {}),
            headers: lowerCase(request.headers ?? {}),
          });
        }
        yield { events, known: skipped, deliveryFailures };
        // Newest first: once a page reaches before the window, later pages are older still.
        cursor = nextCursor(list.link);
        if (older || !cursor) return;
      }
    },
  };
}
