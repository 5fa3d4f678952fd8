import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import { freePort } from '../../services/core/db/embedded.ts';
import { DEFAULT_RETRY_POLICY, retryPolicyFrom } from '../../services/core/queue/queues.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { startHookgate } from '../support/process.ts';
import { workerConfigDocument, writeConfigFile } from '../support/worker-harness.ts';

// pg-boss copies a queue's policy into each job at insert, and createQueue leaves an existing
// queue as it is: so whichever process creates a queue first must create it with the one policy.
// Here a gateway and a worker each start first on their own database, and the queues they leave
// behind are compared.

const QUEUE_POLICY = `
  SELECT name, policy, retry_limit, retry_delay, retry_backoff, retry_delay_max, expire_seconds,
         retention_seconds, deletion_seconds, dead_letter
    FROM pgboss.queue
   WHERE name LIKE 'hookgate.%'
   ORDER BY name`;

const document = workerConfigDocument(
  { demo: { handler: 'record' } },
  { completedJobRetention: '20m', retryLimit: 4, retryDelay: '3s', retryDelayMax: '120s', expireIn: '200s' },
);

let gatewayFirst: TestDatabase;
let workerFirst: TestDatabase;

beforeAll(async () => {
  [gatewayFirst, workerFirst] = await Promise.all([createTestDatabase(), createTestDatabase()]);
});

afterAll(async () => {
  await gatewayFirst?.drop();
  await workerFirst?.drop();
});

/** Runs `serve --role <role>` against `db` until it serves, then stops it. */
async function serveOnce(role: 'gateway' | 'worker', db: TestDatabase, configFile: string): Promise<void> {
  const hookgate = startHookgate(['serve', '--role', role, '--config', configFile], {
    env: { DATABASE_URL: db.url, PORT: String(await freePort()), METRICS_PORT: '0' },
  });
  try {
    await hookgate.waitFor(/hookgate is serving/, 30_000);
  } finally {
    hookgate.child.kill('SIGTERM');
    await hookgate.exited();
  }
}

async function policies(db: TestDatabase): Promise<Record<string, unknown>[]> {
  return (await db.pool.query(QUEUE_POLICY)).rows;
}

describe('queue policy', { timeout: 90_000 }, () => {
  it('is the same whichever process creates the queues first', async () => {
    const configFile = writeConfigFile(document);
    await Promise.all([
      serveOnce('gateway', gatewayFirst, configFile),
      serveOnce('worker', workerFirst, configFile),
    ]);
    const byGateway = await policies(gatewayFirst);
    const byWorker = await policies(workerFirst);
    // The premise: both created the endpoint's apply queue, with the configured worker policy;
    // it is hookgate's only queue (destinations keep their deliveries in their own table).
    expect(byWorker).toEqual([
      expect.objectContaining({
        name: 'hookgate.apply.demo',
        retry_limit: 4,
        retry_delay: 3,
        retry_delay_max: 120,
        expire_seconds: 200,
        deletion_seconds: 1_200,
      }),
    ]);
    expect(byGateway).toEqual(byWorker);

    // And a process starting later changes nothing.
    await serveOnce('worker', gatewayFirst, configFile);
    await serveOnce('gateway', workerFirst, configFile);
    expect(await policies(gatewayFirst)).toEqual(byGateway);
    expect(await policies(workerFirst)).toEqual(byWorker);
  });

  it('the built-in defaults are the config defaults', () => {
    const config = parseConfig(
      { endpoints: { demo: { provider: 'stripe', secrets: ['whsec_test_stripe_secret_for_hookgate'] } } },
      {},
    );
    expect(retryPolicyFrom(config.worker)).toEqual(DEFAULT_RETRY_POLICY);
  });
});
