import { parseConfig } from '../../services/core/config/load.ts';
import type { Config } from '../../services/core/config/schema.ts';
import { createPool } from '../../services/core/db/pool.ts';
import type { ClaimHooks } from '../../services/core/inbox/claim.ts';
import { createLogger } from '../../services/core/logging.ts';
import { createGatewayMetrics, createRegistry } from '../../services/core/metrics.ts';
import { createBoss } from '../../services/core/queue/boss.ts';
import { ensureQueues, outboxPolicyFrom, retryPolicyFrom } from '../../services/core/queue/queues.ts';
import { startGateway } from '../../services/gateway/gateway.ts';

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

/** The real gateway (Express, group commit, pg-boss) on 127.0.0.1 against `databaseUrl`. */
export async function startTestGateway(
  databaseUrl: string,
  config: Config = testConfig(),
  hooks?: ClaimHooks,
): Promise<TestGateway> {
  const logger = createLogger('silent');
  const pool = createPool({
    connectionString: databaseUrl,
    max: config.database.poolSize,
    statementTimeoutMs: config.database.statementTimeout,
    connectTimeoutMs: config.database.connectTimeout,
    applicationName: 'hookgate-test-gateway',
  });
  const boss = createBoss({
    connectionString: databaseUrl,
    max: 2,
    supervise: false,
    applicationName: 'test',
  });
  boss.on('error', () => {});
  await boss.start();
  // The queue policy from the same config a worker would use, as `serve --role gateway` does.
  await ensureQueues(
    boss,
    Object.keys(config.endpoints),
    retryPolicyFrom(config.worker),
    outboxPolicyFrom(config.relay),
  );
  const registry = createRegistry();
  const gateway = await startGateway({
    config,
    pool,
    boss,
    logger,
    metrics: createGatewayMetrics(registry),
    port: 0,
    host: '127.0.0.1',
    ...(hooks ? { hooks } : {}),
  });
  return {
    url: `http://127.0.0.1:${gateway.port}`,
    registry,
    async stop() {
      await gateway.stop();
      await boss.stop({ graceful: false, close: true });
      await pool.end();
    },
  };
}
