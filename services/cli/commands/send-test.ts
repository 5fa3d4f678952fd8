import { z } from 'zod';
import { loadConfig } from '../../core/config/load.ts';
import { HookgateError } from '../../core/errors.ts';
import { sampleDelivery } from '../sample-delivery.ts';

const optionsSchema = z.object({
  endpoint: z.string().min(1),
  config: z.string().min(1),
  type: z.string().min(1).optional(),
  duplicates: z.coerce.number().int().min(0).max(100),
  url: z.url().optional(),
});

/** The newcomer's first success: one signed sample event, then its duplicates. */
export async function sendTestCommand(raw: unknown): Promise<void> {
  const options = optionsSchema.parse(raw);
  const config = loadConfig(options.config);
  const endpoint = config.endpoints[options.endpoint];
  if (!endpoint) {
    const known = Object.keys(config.endpoints).join(', ');
    throw new HookgateError(
      'endpoint_unknown',
      `No endpoint "${options.endpoint}" in ${options.config} (known: ${known}).`,
    );
  }
  const base = options.url ?? `http://127.0.0.1:${process.env.PORT || '8080'}`;
  const target = `${base.replace(/\/$/, '')}/webhooks/${options.endpoint}`;
  const delivery = sampleDelivery(endpoint, options.type, Date.now());
  process.stdout.write(
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
    process.stdout.write(`${label}: HTTP ${response.status} ${text}\n`);
    if (response.status >= 300) failures += 1;
  }
  if (failures > 0) {
    throw new HookgateError(
      'send_test_failed',
      `${failures} of ${options.duplicates + 1} deliveries were not accepted.`,
    );
  }
}
