import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SystemCluster } from '../support/system-postgres.ts';
import { CHART, helm, kubectlOk, loadImage, restrictedNamespace } from './support/cluster.ts';
import { IMAGE } from './support/podman.ts';
import {
  createDatabase,
  imageValues,
  install,
  secret,
  startClusterDatabase,
  valuesFile,
} from './support/release.ts';

// A configuration hookgate refuses but the chart's schema cannot see (a ${NAME} the user's
// Secret lacks): the migration Job's configuration check exits 2, podFailurePolicy fails the Job
// at once, `helm install` fails with hookgate's own sentence, nothing is migrated, no pod of the
// release starts, and neither the failure nor `helm uninstall` leaves a Job behind.

const NAMESPACE = 'hookgate-refused';
let database: SystemCluster;
let url: string;

beforeAll(async () => {
  database = await startClusterDatabase();
  url = await createDatabase(database, 'refused');
  await restrictedNamespace(NAMESPACE);
  await loadImage(IMAGE);
});

afterAll(async () => {
  await database?.stop();
});

describe('a configuration hookgate refuses', () => {
  it('fails the migration Job before anything is migrated, with hookgate’s sentence in helm’s output', async () => {
    // The Secret has the database URL but not the endpoint's signing secret.
    await secret(NAMESPACE, 'hookgate-secrets', { 'database-url': url });
    const installed = await install('hookgate', NAMESPACE, [
      join(CHART, 'ci/existing-secret-values.yaml'),
      valuesFile(imageValues()),
    ]);
    console.log(JSON.stringify({ refusedInstallSeconds: installed.seconds }));
    expect(installed.code).not.toBe(0);
    expect(installed.output).toMatch(
      /config_invalid: \/etc\/hookgate\/hookgate\.yaml is not valid:[\s\S]*endpoints\.stripe\.secrets\[0\]: environment variable STRIPE_WEBHOOK_SECRET is not set/,
    );

    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const migrated = await client.query<{ inbox: string | null }>(
      "SELECT to_regclass('hookgate.inbox')::text AS inbox",
    );
    await client.end();
    expect(migrated.rows[0]?.inbox, 'nothing migrated').toBeNull();

    const deployments = await kubectlOk([
      'get',
      'pods',
      '--namespace',
      NAMESPACE,
      '-l',
      'app.kubernetes.io/component in (gateway,worker)',
      '-o',
      'name',
    ]);
    expect(deployments.trim(), 'no gateway or worker pod').toBe('');
    expect((await kubectlOk(['get', 'jobs', '--namespace', NAMESPACE, '-o', 'name'])).trim()).toBe('');
    const uninstalled = await helm(['uninstall', 'hookgate', '--namespace', NAMESPACE, '--wait']);
    expect(uninstalled.code, uninstalled.stderr).toBe(0);
    expect((await kubectlOk(['get', 'jobs,pods', '--namespace', NAMESPACE, '-o', 'name'])).trim()).toBe('');
  });
});
