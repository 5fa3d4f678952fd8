import type pg from 'pg';
import type { Db as IDatabase } from 'pg-boss';

/** pg-boss's `db` option bound to one connection, so its statements join that transaction. */
export function executorFor(client: pg.ClientBase): IDatabase {
  return {
    executeSql: async (text: string, values?: unknown[]) => {
      const result = await client.query(text, values);
      return { rows: result.rows };
    },
  };
}
