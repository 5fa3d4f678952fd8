import { parseConfig } from '../../services/core/config/load.ts';
import type { Config } from '../../services/core/config/schema.ts';
import type { ClaimHooks } from '../../services/core/inbox/claim.ts';
import { createLogger } from '../../services/core/logging.ts';
import type { createRegistry } from '../../services/core/metrics.ts';
import { startRuntime } from '../../services/runtime/runtime.ts';

export const SW_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
export const SW_OLD_SECRET = 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD';
export const STRIPE_SECRET = 'whsec_test_stripe_secret_for_hookgate';
export const SHOPIFY_SECRET = 'shpss_test_secret_for_hookgate';

/** A config with two Standard Webhooks endpoints and one Stripe endpoint. */
export function testConfig(overrides: Record<string, unknown> = {}): Config {
  return parseConfig(
    {
      claim: { maxWait: '2ms' },
      endpoints: {
        alpha: { provider: 'standard-webhooks', secrets: [SW_SECRET, SW_OLD_SECRET] },
        beta: { provider: 'standard-webhooks', secrets: [SW_SECRET] },
        stripe: { provider: 'stripe', secrets: [STRIPE_SECRET] },
        shop: { provider: 'shopify', secrets: [SHOPIFY_SECRET] },
      },
      ...overrides,
    },
    {},
  );
}

export interface TestGateway {
  readonly url: string;
  readonly registry: ReturnType<typeof createRegistry>;
  stop(): Promise<void>;
}

/**
 * The real gateway (Express, group commit, pg-boss) on 127.0.0.1 against `databaseUrl`, started
 * as `serve --role gateway` starts it (services/runtime/runtime.ts).
 */
export async function startTestGateway(
  databaseUrl: string,
  config: Config = testConfig(),
  hooks?: ClaimHooks,
  /** The gateway's clock, for tests that move time instead of waiting it out. */
  now?: () => number,
): Promise<TestGateway> {
  const runtime = await startRuntime({
    config,
    role: 'gateway',
    databaseUrl,
    databaseHost: 'the test database',
    databaseAddress: 'the test database',
    logger: createLogger('silent'),
    configDir: process.cwd(),
    port: 0,
    host: '127.0.0.1',
    metricsPort: 0,
    metricsHost: '127.0.0.1',
    ...(hooks ? { claimHooks: hooks } : {}),
    ...(now ? { now } : {}),
  });
  return {
    url: `http://127.0.0.1:${runtime.port}`,
    registry: runtime.registry,
    stop: () => runtime.stop(),
  };
}
