// The three roles in use, as a deployment would set them up: a migration login that owns the
// database (not a superuser) runs `hookgate migrate --create-roles`; the gateway and the worker
// run under signed load as a login that is only a member of hookgate_runtime; `helm test`'s
// command waits for its event as a read-only login; `hookgate verify` then finds nothing lost or
// doubled, and no process met a permission error.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Fleet, settle, startFleet, startLoad } from '../chaos/fleet.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { LOAD_MIX_CONFIG } from '../support/load-mix-endpoints.ts';
import { runHookgate } from '../support/process.ts';
import { INSTALL_EFFECTS } from '../support/worker-effects.ts';

const PASSWORD = 'not-a-secret-test-only';
let db: TestDatabase;
let dir: string;
let fleet: Fleet | null = null;

function as(user: string): string {
  const url = new URL(db.url);
  url.username = user;
  url.password = PASSWORD;
  return url.toString();
}

beforeAll(async () => {
  db = await createTestDatabase({ migrated: false });
  dir = mkdtempSync(join(tmpdir(), 'hookgate-roles-'));
});

afterAll(async () => {
  await fleet?.stop().catch(() => {});
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe('least privilege', { timeout: 180_000 }, () => {
  it('migrations as the database owner, gateway and worker as a runtime login: nothing lost, no permission error', async () => {
    const suffix = randomBytes(4).toString('hex');
    const migrator = `hgmig_${suffix}`;
    const app = `hgapp_${suffix}`;
    await db.pool.query(`CREATE ROLE ${migrator} LOGIN CREATEROLE PASSWORD '${PASSWORD}'`);
    await db.pool.query(`ALTER DATABASE ${db.name} OWNER TO ${migrator}`);

    const migrated = await runHookgate(['migrate', '--create-roles', '--json'], {
      env: { DATABASE_URL: as(migrator), LOG_LEVEL: 'warn' },
    });
    expect(migrated.code, migrated.output).toBe(0);
    const owners = await db.pool.query<{ nspname: string; owner: string }>(
      `SELECT nspname, pg_get_userbyid(nspowner) AS owner FROM pg_namespace
        WHERE nspname IN ('hookgate', 'pgboss', 'billing') ORDER BY nspname`,
    );
    expect(owners.rows).toEqual(
      ['billing', 'hookgate', 'pgboss'].map((nspname) => ({ nspname, owner: migrator })),
    );

    await db.pool.query(`CREATE ROLE ${app} LOGIN PASSWORD '${PASSWORD}' IN ROLE hookgate_runtime`);
    // Test-only instrumentation (the effect counter), which the runtime's trigger calls write to.
    await db.pool.query(INSTALL_EFFECTS);
    await db.pool.query(`GRANT SELECT, INSERT ON public.effects, public.stall_control, public.fail_control TO hookgate_runtime;
      GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO hookgate_runtime`);

    const configFile = join(dir, 'hookgate.yaml');
    writeFileSync(configFile, LOAD_MIX_CONFIG);
    fleet = await startFleet({
      url: as(app),
      configFile,
      gateways: 1,
      workers: 1,
      log: (line) => console.log(line),
    });
    const load = await startLoad({ ports: fleet.gatewayPorts, rate: 50, seconds: 10, dir, runId: 'roles' })
      .done;
    // helm test's command, with a login that may only read (tests.databaseUrlSecret).
    const reader = `hgread_${suffix}`;
    await db.pool.query(`CREATE ROLE ${reader} LOGIN PASSWORD '${PASSWORD}' IN ROLE hookgate_readonly`);
    const gatewayUrl = `http://127.0.0.1:${fleet.gatewayPorts[0]}`;
    const sent = await runHookgate(
      ['send-test', '--endpoint', 'things', '--config', configFile, '--url', gatewayUrl, '--wait', '30s'],
      { env: { DATABASE_URL: as(reader), LOG_LEVEL: 'warn' } },
    );
    expect(sent.code, sent.output).toBe(0);
    const settled = await settle({ url: as(app), configFile, dir, load, drainTimeoutMs: 60_000 });
    const outputs = fleet.processes.map((p) => p.current?.output() ?? '').join('\n');
    console.log(JSON.stringify({ ...settled, verify: undefined }));
    expect(outputs).not.toMatch(/permission denied|42501|must be owner/);
    expect(settled.acknowledged).toBeGreaterThan(400);
    expect(settled.lost).toBe(0);
    expect(settled.doubled).toBe(0);
    expect(settled.pending).toBe(0);
    // What the pods ran as: a member of hookgate_runtime, nothing more.
    const member = await db.pool.query<{ rolsuper: boolean; rolcreaterole: boolean; memberof: string[] }>(
      `SELECT rolsuper, rolcreaterole, ARRAY(SELECT b.rolname::text FROM pg_auth_members m JOIN pg_roles b ON b.oid = m.roleid
          WHERE m.member = r.oid) AS memberof FROM pg_roles r WHERE rolname = $1`,
      [app],
    );
    expect(member.rows[0]).toEqual({ rolsuper: false, rolcreaterole: false, memberof: ['hookgate_runtime'] });
  });
});
