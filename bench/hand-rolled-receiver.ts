// The receiver a team would write by hand: verify, then one transaction per request that
// inserts the inbox row and, if new, its job row. Same verifier as hookgate, no group commit,
// no queue library. Context for the ingest ratio, not a target.
import express from 'express';
import pg from 'pg';
import { createProvider } from '../services/core/providers/index.ts';

const secret = process.env.SECRET ?? '';
const provider = createProvider({ provider: 'standard-webhooks' });
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });

await pool.query(`
  CREATE SCHEMA IF NOT EXISTS bench_handrolled;
  CREATE TABLE IF NOT EXISTS bench_handrolled.inbox (
    event_id text PRIMARY KEY, payload jsonb NOT NULL, received_at timestamptz NOT NULL DEFAULT now());
  CREATE TABLE IF NOT EXISTS bench_handrolled.jobs (id bigserial PRIMARY KEY, event_id text NOT NULL);`);

const app = express();
app.post('/webhooks/:endpoint', express.raw({ type: () => true, limit: '1mb' }), async (req, res) => {
  const body = req.body as Buffer;
  const headers = req.headers as Record<string, string>;
  const verdict = provider.verify({
    rawBody: body,
    headers,
    secrets: [secret],
    nowMs: Date.now(),
    toleranceSeconds: 300,
  });
  if (!verdict.ok) {
    res.status(401).json({ error: verdict.code });
    return;
  }
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const inserted = await client.query(
      'INSERT INTO bench_handrolled.inbox (event_id, payload) VALUES ($1, $2::jsonb) ON CONFLICT DO NOTHING RETURNING 1',
      [headers['webhook-id'], body.toString('utf8')],
    );
    if (inserted.rowCount)
      await client.query('INSERT INTO bench_handrolled.jobs (event_id) VALUES ($1)', [headers['webhook-id']]);
    await client.query('COMMIT');
    res.status(200).json({ status: inserted.rowCount ? 'accepted' : 'duplicate' });
  } catch {
    await client.query('ROLLBACK').catch(() => {});
    res.status(503).json({ error: 'database_unavailable' });
  } finally {
    client.release();
  }
});
const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : ''}\n`);
});
process.on('SIGTERM', () => server.close(() => void pool.end().then(() => process.exit(0))));
