import { z } from 'zod';
import { parseDuration } from '../../core/config/duration.ts';
import { loadConfig } from '../../core/config/load.ts';
import { HookgateError } from '../../core/errors.ts';
import { withCommandPool } from '../database.ts';
import { sampleDelivery } from '../sample-delivery.ts';
import { configPath, requireEndpoint } from '../support/options.ts';
import { writeOut } from '../support/terminal-text.ts';

const optionsSchema = z.object({
  endpoint: z.string().min(1),
  config: z.string().min(1).optional(),
  type: z.string().min(1).optional(),
  duplicates: z.coerce.number().int().min(0).max(100),
  url: z.url().optional(),
  wait: z
    .string()
    .optional()
    .transform((text, ctx) => {
      if (text === undefined) return undefined;
      const ms = parseDuration(text);
      if (ms === undefined || ms < 1_000 || ms > 3_600_000) {
        ctx.addIssue({ code: 'custom', message: `"${text}" is not a duration between 1s and 1h, e.g. 60s` });
        return z.NEVER;
      }
      return ms;
    }),
});

export const EVENT_STATUS = `
  SELECT status, last_error FROM hookgate.inbox WHERE endpoint = $1 AND event_id = $2`;

const SETTLED_OK = new Set(['processed', 'ignored', 'stale']);
const SETTLED_FAILED = new Set(['parked', 'dead']);

/** Polls the inbox (DATABASE_URL) until the event is settled; refuses parked, dead and timeouts. */
async function waitUntilSettled(endpoint: string, eventId: string, timeoutMs: number): Promise<void> {
  await withCommandPool('send-test', 10_000, async (pool) => {
    const deadline = Date.now() + timeoutMs;
    let status = 'missing';
    while (Date.now() < deadline) {
      const result = await pool.query<{ status: string; last_error: string | null }>(EVENT_STATUS, [
        endpoint,
        eventId,
      ]);
      const row = result.rows[0];
      status = row?.status ?? 'missing';
      if (SETTLED_OK.has(status)) {
        writeOut(`event ${eventId}: ${status}\n`);
        return;
      }
      if (SETTLED_FAILED.has(status)) {
        throw new HookgateError(
          'send_test_failed',
          `Event ${eventId} ended ${status}: ${row?.last_error ?? 'no error recorded'}.`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    throw new HookgateError(
      'send_test_timeout',
      `Event ${eventId} was still ${status} after ${timeoutMs / 1000}s. Is a worker running?`,
    );
  });
}

/**
 * `--url` may be the gateway's base URL or the endpoint's own URL (what the provider is given):
 * both mean the same target. Another endpoint's URL is refused rather than silently rewritten.
 */
export function targetUrl(given: string | undefined, endpoint: string): string {
  const base = (given ?? `http://127.0.0.1:${process.env.PORT || '8080'}`).replace(/\/+$/, '');
  const named = /\/webhooks\/([^/?#]+)$/.exec(base);
  if (!named) return `${base}/webhooks/${endpoint}`;
  if (named[1] !== endpoint) {
    throw new HookgateError(
      'usage_invalid',
      `--url names endpoint "${named[1]}" but --endpoint is "${endpoint}"; give the gateway's base URL or this endpoint's URL.`,
    );
  }
  return base;
}

/** The newcomer's first success: one signed sample event, then its duplicates. */
export async function sendTestCommand(raw: unknown): Promise<void> {
  const options = optionsSchema.parse(raw);
  const config = loadConfig(configPath(options.config));
  requireEndpoint(config, options.endpoint);
  const endpoint = config.endpoints[options.endpoint]!;
  const target = targetUrl(options.url, options.endpoint);
  const delivery = sampleDelivery(endpoint, options.type, Date.now());
  writeOut(
    `Sending event ${delivery.eventId} to ${target} (${endpoint.provider}, signed with the first secret)\n`,
  );

  let failures = 0;
  for (let attempt = 0; attempt <= options.duplicates; attempt += 1) {
    let response: Response;
    try {
      response = await fetch(target, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...delivery.headers },
        body: delivery.body,
        signal: AbortSignal.timeout(10_000),
      });
    } catch (error) {
      throw new HookgateError(
        'gateway_unreachable',
        `Cannot reach ${target}: ${(error as Error).message}. Is "hookgate serve" running?`,
      );
    }
    const text = await response.text();
    const label = attempt === 0 ? 'delivery' : `duplicate ${attempt}`;
    writeOut(`${label}: HTTP ${response.status} ${text}\n`);
    if (response.status >= 300) failures += 1;
  }
  if (failures > 0) {
    throw new HookgateError(
      'send_test_failed',
      `${failures} of ${options.duplicates + 1} deliveries were not accepted.`,
    );
  }
  if (options.wait !== undefined) await waitUntilSettled(options.endpoint, delivery.eventId, options.wait);
}
