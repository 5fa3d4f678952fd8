import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../services/core/db/embedded.ts';
import { STANDARD_GAUGES_NAMED_TOTAL } from '../../services/core/metrics.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { type Delivery, post, standardWebhook } from '../support/deliveries.ts';
import {
  type PrometheusServer,
  parseExposition,
  run,
  sample,
  startPrometheus,
} from '../support/observability.ts';
import { ROOT, type RunningProcess, runHookgate, startHookgate } from '../support/process.ts';
import { waitFor } from '../support/worker-harness.ts';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const WRONG_SECRET = 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD';
const PROVIDER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';

let db: TestDatabase;
let hookgate: RunningProcess | null = null;
let prometheus: PrometheusServer | null = null;

beforeAll(async () => {
  db = await createTestDatabase({ migrated: false });
  expect((await runHookgate(['migrate'], { env: { DATABASE_URL: db.url } })).code).toBe(0);
});

afterAll(async () => {
  await prometheus?.stop();
  if (hookgate && hookgate.child.exitCode === null) {
    hookgate.child.kill('SIGKILL');
    await hookgate.exited();
  }
  await db?.drop();
});

describe('hookgate scraped by a real Prometheus', () => {
  it('answers a duplicate-rate query, exports traces across claim and apply, and never logs a secret', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookgate-obs-e2e-'));
    const configFile = join(dir, 'hookgate.yaml');
    writeFileSync(
      configFile,
      [
        'claim: { maxWait: 2ms }',
        'worker: { pollingInterval: 100ms }',
        'endpoints:',
        '  demo:',
        '    provider: standard-webhooks',
        '    secrets: ["${DEMO_SECRET}"]',
        '',
      ].join('\n'),
    );
    const port = await freePort();
    const metricsPort = await freePort();
    hookgate = startHookgate(['serve', '--role', 'all', '--config', configFile], {
      env: {
        DATABASE_URL: db.url,
        PORT: String(port),
        METRICS_PORT: String(metricsPort),
        DEMO_SECRET: SECRET,
        LOG_LEVEL: 'info',
        // Spans go to stdout: the test reads them, and greps them for secrets like the logs.
        OTEL_TRACES_EXPORTER: 'console',
        OTEL_SERVICE_NAME: 'hookgate-e2e',
      },
    });
    await hookgate.waitFor(/hookgate is serving/, 60_000);
    const url = `http://127.0.0.1:${port}/webhooks/demo`;

    // 4 events accepted, each delivered 2.5 times more on average (6 duplicates), 3 forged.
    const sent: Delivery[] = [];
    const events = [1, 2, 3, 4].map((n) => standardWebhook(SECRET, { eventId: `evt_e2e_${n}` }));
    const traced = {
      ...events[0]!,
      headers: { ...events[0]!.headers, traceparent: `00-${PROVIDER_TRACE}-00f067aa0ba902b7-01` },
    };
    for (const delivery of [traced, ...events.slice(1)]) {
      sent.push(delivery);
      expect((await post(url, delivery)).json.status).toBe('accepted');
    }
    for (const delivery of [events[0]!, events[0]!, events[1]!, events[1]!, events[2]!, events[3]!]) {
      expect((await post(url, delivery)).json.status).toBe('duplicate');
    }
    for (let i = 0; i < 3; i += 1) {
      const forged = standardWebhook(WRONG_SECRET, { eventId: `evt_forged_${i}` });
      sent.push(forged);
      expect((await post(url, forged)).status).toBe(401);
    }
    await waitFor('all applied', async () => {
      const result = await db.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM hookgate.inbox WHERE status = 'processed'`,
      );
      return result.rows[0]!.n === 4;
    });

    // The scrape itself is well-formed.
    const scrape = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    // promtool flags only the three standard gauges prom-client names `_total` (kept for stock dashboards).
    const checked = await run('promtool', ['check', 'metrics'], scrape);
    expect(checked.output.trim().split('\n').sort()).toEqual(
      STANDARD_GAUGES_NAMED_TOTAL.map(
        (name) => `${name} non-counter metrics should not have "_total" suffix`,
      ),
    );
    const samples = parseExposition(scrape);
    expect(
      sample(samples, 'hookgate_events_applied_total', {
        endpoint: 'demo',
        event_type: 'thing.updated',
        outcome: 'applied',
      }),
    ).toBe(4);

    prometheus = await startPrometheus({
      port: await freePort(),
      targets: [`127.0.0.1:${metricsPort}`],
      ruleFiles: [join(ROOT, 'charts/hookgate/files/prometheus/rules.yaml')],
    });
    const ratio = await waitFor(
      'Prometheus to answer the duplicate-rate query',
      async () => {
        const result = await prometheus!.query(
          'sum by (endpoint) (hookgate_deliveries_total{outcome="duplicate"}) / sum by (endpoint) (hookgate_deliveries_total{outcome=~"accepted|duplicate"})',
        );
        return result[0] ? { endpoint: result[0].metric.endpoint, value: Number(result[0].value[1]) } : null;
      },
      30_000,
      250,
    );
    expect(ratio).toEqual({ endpoint: 'demo', value: 0.6 });
    const forged = await prometheus.query('sum(hookgate_deliveries_total{outcome="signature_invalid"})');
    expect(Number(forged[0]!.value[1])).toBe(3);
    // The shipped rules load into a real server and evaluate without errors.
    const rules = await waitFor('rules evaluated', async () => {
      const data = (await prometheus!.get('/api/v1/rules')) as {
        groups: { rules: { name: string; health: string; lastEvaluation: string }[] }[];
      };
      const all = data.groups.flatMap((g) => g.rules);
      return all.every((r) => !r.lastEvaluation.startsWith('0001')) ? all : null;
    });
    expect(rules.filter((r) => r.health !== 'ok')).toEqual([]);
    expect(rules.length).toBeGreaterThanOrEqual(14);

    // Every dashboard query runs on this server; the process panels (standard prom-client
    // names, joined on hookgate's targets) find this process.
    const dashboard = JSON.parse(
      readFileSync(join(ROOT, 'charts/hookgate/files/grafana/hookgate-dashboard.json'), 'utf8'),
    ) as {
      panels: { title: string; targets?: { expr: string }[]; panels?: { targets?: { expr: string }[] }[] }[];
    };
    const exprs = dashboard.panels
      .flatMap((panel) => [panel, ...(panel.panels ?? [])])
      .flatMap((panel) => (panel.targets ?? []).map((target) => target.expr))
      .map((expr) => expr.replaceAll('$__rate_interval', '1m').replaceAll('$endpoint', '.*'));
    expect(exprs.length).toBeGreaterThan(8);
    for (const expr of exprs) await prometheus.query(expr);
    for (const expr of exprs.filter((e) => /\b(process|nodejs)_/.test(e))) {
      const found = await waitFor(`${expr} to find the hookgate process`, async () => {
        const result = await prometheus!.query(expr);
        return result.length > 0 ? result : null;
      });
      expect(found.map((series) => series.metric.instance)).toEqual([`127.0.0.1:${metricsPort}`]);
    }

    // Traces: the row stores the claim span's traceparent, in the provider's trace.
    const row = await db.pool.query<{ traceparent: string }>(
      `SELECT traceparent FROM hookgate.inbox WHERE event_id = 'evt_e2e_1'`,
    );
    expect(row.rows[0]!.traceparent).toMatch(new RegExp(`^00-${PROVIDER_TRACE}-[0-9a-f]{16}-01$`));
    expect(row.rows[0]!.traceparent).not.toContain('00f067aa0ba902b7');

    hookgate.child.kill('SIGTERM');
    expect(await hookgate.exited()).toBe(0);
    const output = hookgate.output();

    // HTTP and pg instrumentation ran in the real process, with hookgate's own spans; the webhook
    // path skips Express (one path, traced or not), and its HTTP server span names the route.
    for (const scope of ['@opentelemetry/instrumentation-http', '@opentelemetry/instrumentation-pg']) {
      expect(output).toContain(scope);
    }
    expect(output).toContain('POST /webhooks/:endpoint');
    for (const span of ['webhook.verify', 'webhook.claim', 'webhook.apply']) expect(output).toContain(span);

    // One log line per delivery outcome and per apply outcome, with ids and trace ids.
    const lines = output
      .split('\n')
      .filter((line) => line.startsWith('{"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    // Refusals are sampled: the first forged delivery gets its line, the other two are counted.
    const answered = lines.filter((l) => l.msg === 'delivery answered');
    expect(answered.length).toBe(11);
    expect(answered.filter((l) => l.outcome === 'signature_invalid')).toEqual([
      expect.objectContaining({ status: 401, sampled: true }),
    ]);
    expect(answered.find((l) => l.event_id === 'evt_e2e_1' && l.outcome === 'accepted')?.trace_id).toBe(
      PROVIDER_TRACE,
    );
    const applied = lines.filter((l) => l.msg === 'event applied');
    expect(applied.map((l) => l.event_id).sort()).toEqual(events.map((e) => e.eventId).sort());
    expect(applied.find((l) => l.event_id === 'evt_e2e_1')?.trace_id).toBe(PROVIDER_TRACE);

    // No configured secret, no key material, no signature ever reaches the output.
    const forbidden = [SECRET, SECRET.slice('whsec_'.length), WRONG_SECRET.slice('whsec_'.length)];
    for (const delivery of sent) forbidden.push(delivery.headers['webhook-signature']!.split(',')[1]!);
    for (const value of forbidden) expect(output.includes(value), `output contains ${value}`).toBe(false);
  });
});
