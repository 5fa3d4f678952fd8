// Signed load with duplicates through real gateway and worker processes whose every connection
// goes through a stock PgBouncer (Debian's, no ignore_startup_parameters), `hookgate migrate`
// included; then the drain and `hookgate verify`.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { LOAD_MIX_CONFIG } from '../support/load-mix-endpoints.ts';
import { type PoolMode, startPgBouncer } from '../support/pgbouncer.ts';
import { runHookgate } from '../support/process.ts';
import { INSTALL_EFFECTS } from '../support/worker-effects.ts';
import { type Fleet, fleetConnections, type Settlement, settle, startFleet, startLoad } from './fleet.ts';

export interface PgBouncerRunOptions {
  /** A database on the PostgreSQL behind PgBouncer, empty (the run migrates it through PgBouncer). */
  readonly databaseUrl: string;
  readonly mode: PoolMode;
  readonly rate: number;
  readonly seconds: number;
  readonly gateways: number;
  readonly workers: number;
  readonly drainTimeoutMs: number;
  readonly log: (line: string) => void;
}

export interface PgBouncerRunReport extends Omit<Settlement, 'verify'> {
  readonly scenario: string;
  readonly pgbouncer: string;
  readonly requests: number;
  readonly statuses: Readonly<Record<string, number>>;
  readonly violations: number;
}

export async function runThroughPgBouncer(options: PgBouncerRunOptions): Promise<PgBouncerRunReport> {
  const dir = mkdtempSync(join(tmpdir(), `hookgate-pgbouncer-${options.mode}-`));
  const database = new URL(options.databaseUrl).pathname.slice(1);
  const configFile = join(dir, 'hookgate.yaml');
  writeFileSync(configFile, LOAD_MIX_CONFIG);
  // Session mode holds a server connection per client connection: the pool is the fleet's figure.
  const bouncer = await startPgBouncer(options.databaseUrl, {
    mode: options.mode,
    poolSize: fleetConnections(configFile, options.gateways, options.workers),
  });
  let fleet: Fleet | null = null;
  try {
    const through = bouncer.url(database);
    const migrated = await runHookgate(['migrate'], { env: { DATABASE_URL: through, LOG_LEVEL: 'warn' } });
    if (migrated.code !== 0)
      throw new Error(`hookgate migrate through PgBouncer failed:\n${migrated.output}`);
    const direct = new pg.Client({ connectionString: options.databaseUrl });
    await direct.connect();
    await direct.query(INSTALL_EFFECTS);
    await direct.end();

    fleet = await startFleet({
      url: through,
      configFile,
      gateways: options.gateways,
      workers: options.workers,
      log: options.log,
    });
    const load = await startLoad({
      ports: fleet.gatewayPorts,
      rate: options.rate,
      seconds: options.seconds,
      dir,
      runId: `pgb${options.mode[0]}${Date.now().toString(36)}`,
    }).done;
    const settled = await settle({
      url: through,
      configFile,
      dir,
      load,
      drainTimeoutMs: options.drainTimeoutMs,
    });
    const statuses: Record<string, number> = {};
    for (const r of load.results)
      for (const [status, n] of Object.entries(r.statuses)) statuses[status] = (statuses[status] ?? 0) + n;
    const { verify, ...figures } = settled;
    return {
      scenario: `pgbouncer-${options.mode}`,
      pgbouncer: bouncer.version,
      requests: load.results.reduce((n, r) => n + r.requests, 0),
      statuses,
      ...figures,
      violations: verify.violationCount,
    };
  } catch (error) {
    throw new Error(`${(error as Error).message}\nPgBouncer's log:\n${bouncer.log().slice(-3_000)}`);
  } finally {
    await fleet?.stop().catch(() => {});
    await bouncer.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
