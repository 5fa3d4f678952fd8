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
 * A bounded pool whose statements cannot hang the caller: every statement has a timeout and
 * checking out a connection gives up after `connectTimeoutMs`, so a sick database turns into
 * a prompt error (and a 503) instead of a pile of waiting requests.
 */
export function createPool(options: PoolOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max,
    statement_timeout: options.statementTimeoutMs,
    // Client-side backstop: statement_timeout cannot fire if the network silently drops packets.
    query_timeout: options.statementTimeoutMs + 2_000,
    ...(options.idleInTransactionTimeoutMs
      ? { idle_in_transaction_session_timeout: options.idleInTransactionTimeoutMs }
      : {}),
    connectionTimeoutMillis: options.connectTimeoutMs,
    idleTimeoutMillis: 30_000,
    application_name: options.applicationName,
    keepAlive: true,
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
