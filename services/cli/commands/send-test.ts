import { z } from 'zod';
import { parseDuration } from '../../core/config/duration.ts';
import { loadConfig } from '../../core/config/load.ts';
import type { EndpointConfig } from '../../core/config/schema.ts';
import { HookgateError } from '../../core/errors.ts';
import { TEST_EVENT_TYPE } from '../../core/handlers/test-event.ts';
import { eventStatus } from '../../core/inbox/rows.ts';
import { isSettled, STUCK_STATUSES } from '../../core/inbox/status.ts';
import { createProvider } from '../../core/providers/index.ts';
import { withCommandPool } from '../database.ts';
import { type SampleDelivery, sampleDelivery } from '../sample-delivery.ts';
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

const SETTLED_FAILED: ReadonlySet<string> = new Set(STUCK_STATUSES);

/** Polls the inbox (DATABASE_URL) until the event is settled; refuses parked, dead and timeouts. */
async function waitUntilSettled(endpoint: string, eventId: string, timeoutMs: number): Promise<void> {
  await withCommandPool('send-test', 10_000, async (pool) => {
    const deadline = Date.now() + timeoutMs;
    let status = 'missing';
    while (Date.now() < deadline) {
      const row = await eventStatus(pool, endpoint, eventId);
      status = row?.status ?? 'missing';
      if (isSettled(status)) {
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

/**
 * The sample as the gateway will read it (the endpoint's own provider and extraction). Without
 * `--type` it must arrive as a test event: one that arrives as anything else (an hmac endpoint
 * with no event type source reads every event as `unknown`) would be applied by the handler,
 * business writes included, so it is not sent.
 */
export function checkSample(
  endpoint: EndpointConfig,
  name: string,
  delivery: SampleDelivery,
  type?: string,
): string {
  const identified = createProvider(endpoint).identify({
    headers: delivery.headers,
    body: JSON.parse(delivery.body) as unknown,
  });
  const arrivesAs = identified.ok && 'event' in identified ? identified.event.eventType : null;
  if (type === undefined && arrivesAs !== TEST_EVENT_TYPE) {
    throw new HookgateError(
      'send_test_unrecognisable',
      `A test event for endpoint ${name} would arrive as ${arrivesAs === null ? 'no event' : `type "${arrivesAs}"`}, not as ${TEST_EVENT_TYPE}, so its handler would apply it; nothing was sent. Configure where the endpoint reads the event type (hmac: eventTypeHeader or extract.eventType), or pass --type to send a real event on purpose.`,
    );
  }
  return arrivesAs ?? '(none)';
}

/** Where the default target came from, for the "cannot reach" hint. */
function portHint(given: string | undefined): string {
  if (given !== undefined) return '';
  return process.env.PORT
    ? ` (PORT=${process.env.PORT} from this shell)`
    : ' (port 8080: this shell has no PORT; a server started with another PORT needs the same PORT here, or --url)';
}

/** The newcomer's first success: one signed sample event, then its duplicates. */
export async function sendTestCommand(raw: unknown): Promise<void> {
  const options = optionsSchema.parse(raw);
  const config = loadConfig(configPath(options.config));
  requireEndpoint(config, options.endpoint);
  const endpoint = config.endpoints[options.endpoint]!;
  const target = targetUrl(options.url, options.endpoint);
  const delivery = sampleDelivery(endpoint, options.type, Date.now());
  const type = checkSample(endpoint, options.endpoint, delivery, options.type);
  writeOut(
    `Sending ${options.type === undefined ? 'test event' : `a real ${type} event (its handler applies it)`} ${delivery.eventId} to ${target} (${endpoint.provider}, signed with the first secret)\n`,
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
        `Cannot reach ${target}${portHint(options.url)}: ${(error as Error).message}. Is "hookgate serve" running there?`,
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
