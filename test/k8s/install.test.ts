import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI } from '../support/process.ts';
import type { SystemCluster } from '../support/system-postgres.ts';
import type { Scenario } from './scenarios.ts';
import { CHART, helm, kubectl, kubectlOk, loadImage, restrictedNamespace } from './support/cluster.ts';
import { IMAGE } from './support/podman.ts';
import {
  allReady,
  createDatabase,
  imageValues,
  install,
  secret,
  startClusterDatabase,
  valuesFile,
  webhookSecret,
} from './support/release.ts';

// The core scenarios installed as users install them, each in a namespace enforcing PodSecurity
// `restricted`: `helm install --wait` (the migration Job first), every pod Ready, `helm test`
// (a signed event through the gateway Service, settled by a worker), `helm uninstall` leaving no
// Job behind.

let database: SystemCluster;
const figures: Record<string, unknown>[] = [];

beforeAll(async () => {
  database = await startClusterDatabase();
  await loadImage(IMAGE);
});

afterAll(async () => {
  console.log(JSON.stringify({ installs: figures }));
  await database?.stop();
});

/** What each scenario needs beyond its ci/ file: the Secrets it names, the database. */
const PREPARE: Record<string, (namespace: string, url: string) => Promise<object>> = {
  'default-values.yaml': async (_namespace, url) => ({
    secrets: { databaseUrl: url, values: { STRIPE_WEBHOOK_SECRET: webhookSecret() } },
  }),
  'existing-secret-values.yaml': async (namespace, url) => {
    await secret(namespace, 'hookgate-secrets', {
      'database-url': url,
      STRIPE_WEBHOOK_SECRET: webhookSecret(),
      STRIPE_WEBHOOK_SECRET_PREVIOUS: webhookSecret(),
      GITHUB_WEBHOOK_SECRET: randomBytes(20).toString('hex'),
    });
    return {};
  },
  'console-values.yaml': async (namespace, url) => {
    const hash = execFileSync(process.execPath, [CLI, 'console', 'hash-password'], {
      input: randomBytes(12).toString('hex'),
    })
      .toString()
      .trim();
    await secret(namespace, 'hookgate-secrets', {
      DATABASE_URL: url,
      STRIPE_WEBHOOK_SECRET: webhookSecret(),
      CONSOLE_SESSION_SECRET: randomBytes(36).toString('base64'),
    });
    await secret(namespace, 'hookgate-console-users', { users: `alice:${hash}` });
    return {};
  },
};

describe('the core scenarios, installed', () => {
  it.each(Object.keys(PREPARE) as Scenario[])('%s', async (scenario) => {
    const name = scenario.replace(/-values\.yaml$/, '');
    const namespace = `hookgate-${name}`;
    await restrictedNamespace(namespace);
    const url = await createDatabase(database, `install_${name.replace(/-/g, '_')}`);
    const extra = await (PREPARE[scenario] as (namespace: string, url: string) => Promise<object>)(
      namespace,
      url,
    );

    const installed = await install('hookgate', namespace, [
      join(CHART, 'ci', scenario),
      valuesFile({ ...imageValues(), ...extra }),
    ]);
    expect(installed.code, installed.output).toBe(0);
    expect(installed.output, 'no PodSecurity warning').not.toMatch(/would violate PodSecurity/);
    const ready = await allReady(namespace, 'hookgate');

    const tested = await helm(['test', 'hookgate', '--namespace', namespace, '--logs', '--timeout', '5m']);
    expect(tested.code, tested.stdout + tested.stderr).toBe(0);
    expect(tested.stdout).toMatch(/delivery: HTTP 200/);
    expect(tested.stdout).toMatch(/Phase:\s+Succeeded/);

    const uninstalled = await helm(['uninstall', 'hookgate', '--namespace', namespace, '--wait']);
    expect(uninstalled.code, uninstalled.stderr).toBe(0);
    const jobs = await kubectlOk(['get', 'jobs', '--namespace', namespace, '-o', 'name']);
    expect(jobs.trim(), 'no Job left behind').toBe('');
    figures.push({
      scenario,
      installSeconds: installed.seconds,
      helmTestSeconds: tested.seconds,
      pods: ready.map((pod) => ({ component: pod.component, startToReadyMs: pod.startToReadyMs })),
    });
    await kubectl(['delete', 'namespace', namespace, '--wait=false']);
  });
});
