import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { MIGRATION_CONNECTIONS, processConnections } from '../../services/core/config/connections.ts';
import { parseConfig } from '../../services/core/config/load.ts';
import { CHART, find, render, run, scenarioFile, tool } from './tools.ts';

// NOTES.txt, as `helm install` prints it (client-side dry run: no cluster, so `lookup` finds no
// Secret and the warning must list what the Secret needs).
async function notes(scenario: string, set: readonly string[] = []): Promise<string> {
  const args = ['install', 'hg', CHART, '-n', 'hookgate', '--dry-run=client', '-f', scenarioFile(scenario)];
  for (const value of set) args.push('--set', value);
  const result = await run(tool('helm'), args, { KUBECONFIG: '/dev/null' });
  expect(result.code, result.stderr).toBe(0);
  return result.stdout.slice(result.stdout.indexOf('NOTES:'));
}

describe('NOTES.txt', () => {
  it('gives the webhook URL of every endpoint and warns about a Secret it cannot find, listing its keys', async () => {
    const text = await notes('existing-secret-values.yaml');
    expect(text).toContain('github (github): http://hg-hookgate-gateway.hookgate.svc:80/webhooks/github');
    expect(text).toContain('stripe (stripe): http://hg-hookgate-gateway.hookgate.svc:80/webhooks/stripe');
    expect(text).toMatch(/WARNING: Secret "hookgate-secrets" was not found/);
    for (const key of [
      'database-url',
      'GITHUB_WEBHOOK_SECRET',
      'STRIPE_WEBHOOK_SECRET',
      'STRIPE_WEBHOOK_SECRET_PREVIOUS',
    ]) {
      expect(text).toContain(`  - ${key}\n`);
    }
    expect(text).toContain('helm test hg -n hookgate');
    expect(text).toContain('signs a sample event with the secret of endpoint\n"github" (tests.endpoint)');
    // What `send-test --wait` waits for (render-and-run.test.ts sees it): no handler processes it.
    expect(text).toContain('has settled it `ignored` (a test event reaches no handler: no business write)');
    expect(text).not.toMatch(/handler processes/);
  });

  it('counts the message-broker connections of the worker pods when there are bus destinations', async () => {
    const base = 'config.endpoints.stripe.destinations';
    const rabbit = (name: string, exchange: string) => [
      `${base}.${name}.type=rabbitmq`,
      `${base}.${name}.rabbitmq.url=amqp://rabbitmq:5672/hooks`,
      `${base}.${name}.rabbitmq.exchange=${exchange}`,
      `${base}.${name}.rabbitmq.routingKey=hooks`,
    ];
    const text = await notes('default-values.yaml', [
      `${base}.stream.type=nats`,
      `${base}.stream.nats.servers[0]=nats://nats:4222`,
      `${base}.stream.nats.subject=webhooks.all`,
      ...rabbit('one', 'a'),
      ...rabbit('two', 'b'),
      'worker.replicaCount=4',
    ]);
    // 4 workers and the rolling update's surge of 1.
    expect(text).toContain(
      'Message-broker connections per worker pod: 1 to NATS (one per type: nats destination), at most 1 to RabbitMQ\n(one per broker: URL, credentials and TLS); at full scale 5 worker pods open 5 and at most 5',
    );
    expect(await notes('default-values.yaml')).not.toContain('Message-broker connections');
  });

  it('uses the Ingress host and scheme when an Ingress is enabled', async () => {
    const text = await notes('ingress-values.yaml');
    expect(text).toContain('stripe (stripe): https://webhooks.example.com/webhooks/stripe');
    expect(text).not.toContain('port-forward');
  });

  it('renders with an Ingress whose hosts are null (it was a nil-pointer error)', async () => {
    const text = await notes('ingress-values.yaml', [
      'gateway.ingress.hosts=null',
      'gateway.ingress.tls=null',
    ]);
    expect(text).toContain('stripe (stripe): http://<your ingress address>/webhooks/stripe');
    expect(text).toContain('gateway.ingress.hosts is empty: the Ingress routes /webhooks/ on any host');
  });

  it('says which peers the NetworkPolicy admits, and warns loudly when it is off', async () => {
    const on = await notes('default-values.yaml');
    expect(on).toContain('NetworkPolicy is on:');
    expect(on).toContain(
      "the metrics port (9464: /metrics, the worker's probes) accepts networkPolicy.metricsFrom only",
    );
    expect(on).not.toContain('networkPolicy.enabled is false');
    const off = await notes('default-values.yaml', ['networkPolicy.enabled=false']);
    expect(off).toContain('WARNING: networkPolicy.enabled is false. Any pod in the cluster can reach');
  });

  it('says that alerts and recording rules are missing when prometheusRule is off, and not when it is on', async () => {
    const off = await notes('default-values.yaml', ['metrics.dashboard.enabled=true']);
    expect(off).toContain(
      "NOTE: metrics.prometheusRule.enabled is false: hookgate's alerts (docs/runbooks.md) and\nrecording rules are not installed",
    );
    expect(off).toContain('The dashboard does not need them (it reads raw series).');
    const on = await notes('monitoring-values.yaml');
    expect(on).not.toContain('metrics.prometheusRule.enabled is false');
  });
});

describe('NOTES.txt: PostgreSQL connections at full scale', () => {
  const figure = (text: string) => {
    const match =
      /PostgreSQL connections at full scale: up to (\d+) of postgresql\.maxConnections \((\d+)\)/.exec(text);
    if (!match) throw new Error(`no connection figure in:\n${text}`);
    return { total: Number(match[1]), limit: Number(match[2]) };
  };

  // The same arithmetic from hookgate's own pool sizing (what `serve` opens), on the config the
  // chart renders: each Deployment's largest replica count plus its 25 % surge, rounded up.
  async function expected(scenario: string, set: readonly string[]) {
    const manifests = await render({ valuesFiles: [scenarioFile(scenario)], set });
    const data = find(manifests, 'ConfigMap', 'hookgate-config').data as Record<string, string>;
    const text = data['hookgate.yaml'] as string;
    const env = Object.fromEntries(
      [...text.matchAll(/\$\{([A-Z_0-9]+)\}/g)].map((m) => [m[1], 'x'.repeat(32)]),
    );
    const config = parseConfig(parse(text), env);
    const pods = (replicas: number) => replicas + Math.ceil(replicas / 4);
    const replicasOf = (kind: string, name: string) => {
      const hpa = manifests.find((m) => m.kind === 'HorizontalPodAutoscaler' && m.metadata.name === name);
      if (hpa) return (hpa.spec as { maxReplicas: number }).maxReplicas;
      const scaled = manifests.find((m) => m.kind === 'ScaledObject' && m.metadata.name === name);
      if (scaled) return (scaled.spec as { maxReplicaCount: number }).maxReplicaCount;
      return (find(manifests, kind, name).spec as { replicas: number }).replicas;
    };
    const keda = manifests.some((m) => m.kind === 'ScaledObject') ? 1 : 0;
    const migrations = manifests.some((m) => m.kind === 'Job') ? MIGRATION_CONNECTIONS : 0;
    return (
      pods(replicasOf('Deployment', 'hookgate-gateway')) * processConnections(config, 'gateway') +
      pods(replicasOf('Deployment', 'hookgate-worker')) * processConnections(config, 'worker') +
      migrations +
      keda
    );
  }

  const cases: { name: string; scenario: string; set: string[]; warns: boolean }[] = [
    { name: 'the defaults', scenario: 'default-values.yaml', set: [], warns: false },
    {
      name: 'two endpoints, a larger worker pool and more workers',
      scenario: 'existing-secret-values.yaml',
      set: ['config.worker.poolSize=30', 'worker.replicaCount=3'],
      warns: true,
    },
    {
      name: "the issue's full scale: gateway HPA to 10 (pool 10), KEDA to 10 workers",
      scenario: 'default-values.yaml',
      set: ['gateway.autoscaling.enabled=true', 'worker.keda.enabled=true'],
      warns: true,
    },
    {
      name: 'the same under a larger postgresql.maxConnections',
      scenario: 'default-values.yaml',
      set: ['gateway.autoscaling.enabled=true', 'worker.keda.enabled=true', 'postgresql.maxConnections=500'],
      warns: false,
    },
    {
      name: 'destinations: one plain, one with a breaker (its slots count), in the worker pool',
      scenario: 'default-values.yaml',
      set: [
        'config.endpoints.stripe.destinations.ledger.url=http://ledger.internal/hooks',
        'config.endpoints.stripe.destinations.crm.url=http://crm.internal/hooks',
        'config.endpoints.stripe.destinations.crm.concurrency=8',
        'config.endpoints.stripe.destinations.crm.breaker.failures=5',
        'config.worker.poolSize=5',
      ],
      warns: true,
    },
    {
      name: 'a worker HPA, more worker loops, migrations off',
      scenario: 'hpa-values.yaml',
      set: ['config.worker.concurrency=4', 'migrations.enabled=false'],
      warns: true,
    },
  ];

  it.each(cases)(
    '$name: the figure is what hookgate would open; the warning follows maxConnections',
    async (c) => {
      const text = await notes(c.scenario, c.set);
      const { total, limit } = figure(text);
      expect(total).toBe(await expected(c.scenario, c.set));
      expect(total > limit).toBe(c.warns);
      expect(text.includes('WARNING: at full scale this release could open')).toBe(c.warns);
    },
  );

  it("the defaults at full scale exceed PostgreSQL's default 100 (the case the warning is for)", async () => {
    const text = await notes('default-values.yaml', [
      'gateway.autoscaling.enabled=true',
      'worker.keda.enabled=true',
    ]);
    expect(text).toContain('= 13 gateway pods × 12 + 13 worker pods × 11 + 2 (migration Job) + 1 (KEDA)');
    expect(figure(text)).toEqual({ total: 13 * 12 + 13 * 11 + 2 + 1, limit: 100 });
  });
});
