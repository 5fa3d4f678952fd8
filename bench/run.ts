// `make bench`: every figure is a ratio against a baseline measured in this same run, on this
// same machine, with the same load generator. Absolute numbers are printed for context only.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { ingestScenario } from './ingest.ts';
import { benchDatabase, ROOT } from './processes.ts';

const settings = z
  .object({
    BENCH_SECONDS: z.coerce.number().int().min(2).max(300).default(10),
    BENCH_CONNECTIONS: z.coerce.number().int().min(1).max(1024).default(64),
    BENCH_ROUNDS: z.coerce.number().int().min(1).max(10).default(2),
  })
  .parse(process.env);

const fmt = (n: number, digits = 0) => n.toFixed(digits).padStart(9);

const database = await benchDatabase();
try {
  const ingest = await ingestScenario(database, {
    connections: settings.BENCH_CONNECTIONS,
    seconds: settings.BENCH_SECONDS,
    rounds: settings.BENCH_ROUNDS,
  });
  const lines = [
    `ingest: ${settings.BENCH_CONNECTIONS} connections, ${settings.BENCH_SECONDS}s x ${settings.BENCH_ROUNDS} rounds, 20% duplicates`,
    '  target              2xx/s   p50 ms   p99 ms   non-2xx  errors',
    ...ingest.baseline.map(
      (r) =>
        `  bare express  ${fmt(r.okPerSecond)} ${fmt(r.p50Ms, 1)} ${fmt(r.p99Ms, 1)} ${fmt(r.non2xx)} ${fmt(r.errors)}`,
    ),
    ...ingest.gateway.map(
      (r) =>
        `  hookgate      ${fmt(r.okPerSecond)} ${fmt(r.p50Ms, 1)} ${fmt(r.p99Ms, 1)} ${fmt(r.non2xx)} ${fmt(r.errors)}`,
    ),
    `  mean claim batch: ${ingest.meanClaimBatch.toFixed(1)} deliveries per transaction`,
    `  ratio (hookgate accepted/s ÷ bare express 2xx/s): ${ingest.ratio.toFixed(2)}   (issue target ≥ 0.5, goal ≥ 0.6)`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'ingest.json'), `${JSON.stringify(ingest, null, 2)}\n`);
} finally {
  await database.stop();
}
