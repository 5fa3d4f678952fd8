import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { run } from '../support/observability.ts';
import { ROOT } from '../support/process.ts';

const RULES = join(ROOT, 'charts/hookgate/files/prometheus/rules.yaml');
const RULE_TESTS = join(ROOT, 'charts/hookgate/files/prometheus/rules.test.yaml');
const DASHBOARD = join(ROOT, 'charts/hookgate/files/grafana/hookgate-dashboard.json');

interface Rule {
  readonly record?: string;
  readonly alert?: string;
  readonly annotations?: Record<string, string>;
}
const rules = (parse(readFileSync(RULES, 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap(
  (group) => group.rules,
);

describe('Prometheus rules', () => {
  it('pass promtool check rules', async () => {
    const result = await run('promtool', ['check', 'rules', RULES]);
    expect(result.output).toContain('SUCCESS');
    expect(result.code).toBe(0);
  });

  it('pass their promtool unit tests: each alert fires on failing series and stays quiet on healthy ones', async () => {
    const result = await run('promtool', ['test', 'rules', RULE_TESTS]);
    expect(result.output).toContain('SUCCESS');
    expect(result.code).toBe(0);
    // Every alert is exercised both ways.
    const tests = readFileSync(RULE_TESTS, 'utf8');
    for (const rule of rules.filter((r) => r.alert)) {
      const mentions = tests.split(`alertname: ${rule.alert}\n`).length - 1;
      expect(mentions, rule.alert).toBeGreaterThanOrEqual(2);
    }
  });

  it('have recording rules for duplicate rate and ack p99, and a runbook section per alert', () => {
    const records = rules.flatMap((r) => (r.record ? [r.record] : []));
    expect(records).toContain('hookgate:duplicate_ratio:rate5m');
    expect(records).toContain('hookgate:ack_duration_seconds:p99_5m');
    const runbooks = readFileSync(join(ROOT, 'docs/runbooks.md'), 'utf8');
    const alerts = rules.filter((r) => r.alert);
    expect(alerts.map((r) => r.alert)).toEqual(
      expect.arrayContaining([
        'HookgateBacklogOldestPendingAge',
        'HookgateDeadOrParkedEvents',
        'HookgateSignatureFailureSpike',
        'HookgateDatabaseUnavailable',
        'HookgateNoWorkerConsuming',
        'HookgateEndToEndLatencyHigh',
      ]),
    );
    for (const rule of alerts) {
      expect(runbooks, rule.alert).toContain(`## ${rule.alert}\n`);
      expect(rule.annotations?.runbook).toBe(`docs/runbooks.md#${rule.alert!.toLowerCase()}`);
    }
  });
});

/** Joined onto unprefixed standard metrics so the dashboard reads hookgate's processes only. */
const HOOKGATE_TARGETS = ' and on (job, instance) group by (job, instance) (hookgate_backlog_events)';

describe('Grafana dashboard', () => {
  interface Panel {
    readonly title: string;
    readonly type: string;
    readonly targets?: { expr: string }[];
    readonly panels?: Panel[];
  }
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { uid: string; panels: Panel[] };
  const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);

  it('has the panels an on-call SRE needs', () => {
    const titles = panels.map((p) => p.title);
    for (const title of [
      'Ingest by outcome',
      'Duplicate rate',
      'Ack latency',
      'Backlog',
      'Oldest pending age',
      'Applied by outcome',
      'Dead and parked',
      'End-to-end latency',
      'Destination attempts by outcome',
      'Held and dead deliveries',
      'Open breakers and attempt p99',
      'Quarantined deliveries held',
      'Paused endpoints',
    ]) {
      expect(titles).toContain(title);
    }
  });

  it('queries only metrics that are documented or recorded, and takes max() of backlog gauges', () => {
    const reference = readFileSync(join(ROOT, 'docs/observability.md'), 'utf8');
    const records = new Set(rules.flatMap((r) => (r.record ? [r.record] : [])));
    const exprs = panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
    expect(exprs.length).toBeGreaterThan(8);
    for (const expr of exprs) {
      for (const [name] of expr.matchAll(/hookgate[a-z0-9_:]*/g)) {
        const base = name.replace(/_(bucket|count|sum)$/, '');
        if (records.has(name)) continue;
        expect(reference, `${name} in ${expr}`).toContain(`\`${base}\``);
      }
      // The join that keeps hookgate's targets reads no backlog value, so it is not an aggregation.
      const values = expr.replace(HOOKGATE_TARGETS, '');
      if (/hookgate_backlog_/.test(values)) expect(expr, expr).toMatch(/max by/);
    }
  });

  it('works without the recording rules (metrics.prometheusRule off): it queries raw series only', () => {
    const records = rules.flatMap((r) => (r.record ? [r.record] : []));
    const exprs = panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
    for (const expr of exprs) {
      for (const record of records) expect(expr, expr).not.toContain(record);
      expect(expr, expr).not.toMatch(/hookgate:/);
    }
  });

  it("reads prom-client's standard process metrics by their standard names, only from hookgate's targets", () => {
    const reference = readFileSync(join(ROOT, 'docs/observability.md'), 'utf8');
    const exprs = panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
    const standard = exprs.filter((expr) => /\b(process|nodejs)_/.test(expr));
    expect(standard.length).toBeGreaterThanOrEqual(3);
    for (const expr of standard) {
      expect(expr).not.toMatch(/hookgate_(process|nodejs)_/);
      // Unprefixed names are exported by every Node.js (and Go, …) target: keep hookgate's.
      expect(expr).toContain(HOOKGATE_TARGETS);
      for (const [name] of expr.matchAll(/\b(process|nodejs)_[a-z0-9_]+/g)) {
        expect(reference, name).toContain(`\`${name}\``);
      }
    }
  });
});
