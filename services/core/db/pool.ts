import pg from 'pg';

export interface PoolOptions {
  readonly connectionString: string;
  readonly max: number;
  readonly statementTimeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly applicationName: string;
  /**
   * A session idle inside a transaction longer than this is ended by PostgreSQL, releasing its
   * locks (a worker's handler hung in JavaScript while holding inbox rows). Off when unset.
   */
  readonly idleInTransactionTimeoutMs?: number;
}

/**
 * Idle seconds before the kernel probes a connection. Node.js (libuv) then probes every second,
 * ten times, so a peer that vanished without a word (a partition, a host that lost power) is
 * found in about 20 s instead of the kernel's default of two hours.
 */
export const KEEPALIVE_IDLE_MS = 10_000;

/** One round trip on each new connection, before its first use; see createPool. */
const SET_STATEMENT_TIMEOUT = `SELECT set_config('statement_timeout', $1, false)`;
const SET_STATEMENT_AND_IDLE_TIMEOUTS = `
  SELECT set_config('statement_timeout', $1, false),
         set_config('idle_in_transaction_session_timeout', $2, false)`;

/**
 * Sets the session's limits on a new connection. They are not sent as startup parameters (what
 * node-postgres's `statement_timeout` option does) because PgBouncer refuses every startup
 * parameter it does not track (`unsupported startup parameter: statement_timeout`), and its
 * escape hatch, `ignore_startup_parameters`, would drop the limit without a word. A SET after
 * connecting passes through any pooler in session mode. A failure ends the connection, so no
 * connection is ever used without its limits.
 */
async function applySessionLimits(client: pg.ClientBase, options: PoolOptions): Promise<void> {
  const statement = String(options.statementTimeoutMs);
  if (options.idleInTransactionTimeoutMs) {
    await client.query(SET_STATEMENT_AND_IDLE_TIMEOUTS, [
      statement,
      String(options.idleInTransactionTimeoutMs),
    ]);
  } else {
    await client.query(SET_STATEMENT_TIMEOUT, [statement]);
  }
}

/**
 * A bounded pool whose statements cannot hang the caller: every statement has a timeout and
 * checking out a connection gives up after `connectTimeoutMs`, so a sick database turns into
 * a prompt error (and a 503) instead of a pile of waiting requests.
 */
export function createPool(options: PoolOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max,
    // Client-side backstop: statement_timeout cannot fire if the network silently drops packets.
    query_timeout: options.statementTimeoutMs + 2_000,
    connectionTimeoutMillis: options.connectTimeoutMs,
    idleTimeoutMillis: 30_000,
    application_name: options.applicationName,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_IDLE_MS,
    onConnect: (client) => applySessionLimits(client, options),
  });
  // An idle connection dropped by the server emits here; without a listener Node would crash.
  // The next checkout simply opens a fresh connection.
  pool.on('error', () => {});
  // A checked-out connection has no listener of pg-pool's: if the server ends its session
  // between queries (idle-in-transaction timeout, restart), the error event would crash the
  // process. The next query on it fails instead, and its caller discards the connection.
  pool.on('connect', (client) => {
    client.on('error', () => {});
  });
  return pool;
}

export type Queryable = Pick<pg.ClientBase, 'query'>;
