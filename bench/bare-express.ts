// The ingest baseline: the least an Express receiver can do — read the body, answer 204.
import express from 'express';

const app = express();
app.post('/webhooks/:endpoint', express.raw({ type: () => true, limit: '1mb' }), (_req, res) => {
  res.status(204).end();
});
const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : ''}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
