import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliInProcess } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { SW_SECRET, startTestGateway, type TestGateway, testConfig } from '../support/gateway.ts';
import { workerConfigDocument, writeConfigFile } from '../support/worker-harness.ts';

// The quarantine incident of README.md ("A quarantine incident") and docs/runbooks.md, command by
// command, with the output shapes those pages show: a delivery without a type is held, listed,
// shown, released after the type pointer is added, and the list is empty again.
let db: TestDatabase;
let gateway: TestGateway;

beforeAll(async () => {
  db = await createTestDatabase();
  gateway = await startTestGateway(
    db.url,
    testConfig({ endpoints: { orders: { provider: 'standard-webhooks', secrets: [SW_SECRET] } } }),
  );
});

afterAll(async () => {
  await gateway?.stop();
  await db?.drop();
});

describe('the quarantine incident walk-through', () => {
  it('list → show → fix extract.eventType → release → verify the event and the audit', async () => {
    const env = { DATABASE_URL: db.url, HOOKGATE_CONFIG: undefined, HOOKGATE_ACTOR: 'alice' };
    const delivery = standardWebhook(SW_SECRET, {
      eventId: 'msg_2Kp0',
      body: '{"kind":"order.paid","data":{"id":"ord_1"}}',
    });
    const reply = await post(`${gateway.url}/webhooks/orders`, delivery);
    expect([reply.status, reply.json]).toEqual([
      200,
      { status: 'quarantined', reason: 'event_type_missing' },
    ]);

    const list = await runCliInProcess(['quarantine', 'list', '--endpoint', 'orders'], env);
    expect(list.code, list.output).toBe(0);
    expect(list.stdout).toMatch(/^ID\s+ENDPOINT\s+RECEIVED\s+REASON\s+BYTES\s+STATE\s*$/m);
    expect(list.stdout).toMatch(/^\s*1\s+orders\s+\S+Z\s+event_type_missing\s+43\s+held\s*$/m);

    const show = await runCliInProcess(['quarantine', 'show', '1'], env);
    expect(show.stdout).toMatch(/^id 1 {2}endpoint orders {2}held$/m);
    expect(show.stdout).toMatch(/^received \S+Z {2}reason event_type_missing: /m);
    expect(show.stdout).toContain('  webhook-id: msg_2Kp0');
    expect(show.stdout).toContain('body (43 bytes):\n{"kind":"order.paid","data":{"id":"ord_1"}}');

    const fixed = writeConfigFile(workerConfigDocument({ orders: { extract: { eventType: '/kind' } } }));
    const check = await runCliInProcess(['config', 'check', '--config', fixed], env);
    expect(check.code, check.output).toBe(0);
    const release = await runCliInProcess(
      ['quarantine', 'release', '1', '--config', fixed, '--reason', 'added extract.eventType /kind'],
      env,
    );
    expect([release.code, release.stdout]).toEqual([0, '1: released as event msg_2Kp0 (accepted)\n']);

    const after = await runCliInProcess(['quarantine', 'list', '--endpoint', 'orders'], env);
    expect(after.stdout).not.toMatch(/held/);
    const all = await runCliInProcess(['quarantine', 'list', '--endpoint', 'orders', '--all'], env);
    expect(all.stdout).toMatch(/^\s*1\s+orders\s+\S+Z\s+event_type_missing\s+43\s+released\s*$/m);

    const event = await runCliInProcess(['events', 'show', 'msg_2Kp0', '--endpoint', 'orders'], env);
    expect(event.code, event.output).toBe(0);
    expect(event.stdout).toContain('order.paid');

    const audit = await runCliInProcess(['audit', '--command', 'quarantine release'], env);
    expect(audit.stdout).toMatch(/alice\s+quarantine release\s+orders/);
  });
});
