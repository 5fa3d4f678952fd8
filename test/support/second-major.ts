/**
 * The integration files that run a second time on PostgreSQL 15 (the `integration-pg15` project,
 * vitest.config.ts): those whose outcome can depend on the major — query plans, migrations, the
 * inbox's partitions, roles and grants, PgBouncer, and the claim and apply statements that every
 * event goes through. Every other integration file runs on PostgreSQL 18 only: what it proves
 * (HTTP answers, handlers' rules, operator actions, retries) is the same on any major, and the
 * statements it sends are prepared and planned on PostgreSQL 15 by the plan audit
 * (plan-audit.test.ts records what a gateway, a worker and the CLI send) and run there by the
 * console's role test (every page and action).
 *
 * test/unit/second-major.test.ts reads each integration file and fails when one that touches
 * those areas (docs/architecture.md, "How to write a test that needs time") is missing here; a
 * file listed without touching them says why.
 */
export const SECOND_MAJOR: Readonly<Record<string, string>> = {
  'test/integration/claim-concurrency.test.ts': 'the claim',
  'test/integration/claim-delivery-counts.test.ts': 'the claim',
  'test/integration/claim-plan.test.ts': 'plans, the claim',
  'test/integration/claim-round-trips.test.ts': 'the claim',
  'test/integration/console-plans.test.ts': 'plans',
  'test/integration/console-quarantine-audit-plans.test.ts': 'plans',
  'test/integration/console-role.test.ts': 'roles, migrations; every console statement run on 15',
  'test/integration/console-role-writes.test.ts':
    "roles: the console login's writes refused, the key trigger",
  'test/integration/prune-partition-counts.test.ts': 'partitions: rows of dropped week partitions counted',
  'test/integration/gateway-claim-failures.test.ts': 'the claim',
  'test/integration/payload-search.test.ts':
    "the claim: rows marked for the console's payload index, through the gateway and a release",
  'test/integration/gateway-claim.test.ts':
    'the claim through the gateway: answers of new and duplicate deliveries',
  'test/integration/inbox-partitions.test.ts': 'partitions, the claim',
  'test/integration/migrate-concurrent-index.test.ts': 'plans, migrations',
  'test/integration/migrate.test.ts': 'migrations',
  'test/integration/observability-metrics.test.ts': 'plans, partitions',
  'test/integration/outbound-secrets.test.ts': "roles, migrations: the console login's reach to secrets",
  'test/integration/pgbouncer.test.ts': 'PgBouncer, migrations',
  'test/integration/plan-audit.test.ts':
    'plans: every statement of the gateway, worker and CLI prepared on 15',
  'test/integration/prune.test.ts': 'plans, partitions',
  'test/integration/reconcile.test.ts': 'the claim',
  'test/integration/roles.test.ts': 'roles, migrations, partitions',
  'test/integration/worker-apply.test.ts':
    "the claim's other half: the apply engine's row locks, job fence and settle on each major",
  'test/integration/api-reconcile.test.ts': 'roles: the console role queues a run through a definer function',
  'test/integration/batch-lock-order.test.ts': "the apply engine's lock order under concurrency",
  'test/integration/batch-lock-fallback.test.ts': "the apply engine's lock fallback",
};

/** Integration files that start a PostgreSQL of their own (always the embedded 18): never run twice. */
export const OWN_SERVER: Readonly<Record<string, string>> = {
  'test/integration/database-outage.test.ts': 'stops and restarts the embedded PostgreSQL it starts',
};
