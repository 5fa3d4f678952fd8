import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_PROCESS_CONNECTIONS } from '../../services/core/config/connection-bound.ts';
import { destinationLoopConnections, processConnections } from '../../services/core/config/connections.ts';
import { parseConfig } from '../../services/core/config/load.ts';
import { type Config, configSchema } from '../../services/core/config/schema.ts';
import { runCliInProcess } from '../support/cli.ts';

// Each key is bounded on its own; what a process would open from all of them together is bounded
// too, by services/core/config/connections.ts's arithmetic (what `serve` sizes its pools with). The
// figures expected are computed by that same code, so they follow it when it changes.
const figure = (n: number) => n.toLocaleString('en-US').replaceAll(',', ' ');
const destination = { url: 'https://example.com/hook', concurrency: 64, breaker: { failures: 5 } };

function documentWith(endpointCount: number, destinationsEach: number, concurrency = 16) {
  const destinations = Object.fromEntries(
    Array.from({ length: destinationsEach }, (_, i) => [`d${i}`, destination]),
  );
  return {
    worker: { concurrency },
    endpoints: Object.fromEntries(
      Array.from({ length: endpointCount }, (_, i) => [
        `e${i}`,
        { provider: 'stripe', secrets: ['whsec_x'], ...(destinationsEach > 0 ? { destinations } : {}) },
      ]),
    ),
  };
}

/** The configuration as the schema alone makes it (every key within its own bounds). */
const schemaOnly = (document: unknown): Config => configSchema.parse(document);

function problem(document: unknown): string | null {
  try {
    parseConfig(document, {});
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

describe('PostgreSQL connections per process', () => {
  it('refuses a configuration asking a worker for ~98 000 connections, saying why in its figures', () => {
    // 60 endpoints × 25 destinations at concurrency 64 with a breaker: each loop holds 65.
    const document = documentWith(60, 25);
    const message = problem(document);
    const config = schemaOnly(document);
    const worker = processConnections(config, 'worker');
    const loops = destinationLoopConnections(config);
    expect(worker).toBeGreaterThan(97_000);
    expect(message).toContain(
      `PostgreSQL connections: a worker would open up to ${figure(worker)} PostgreSQL connections, and serve --role all ${figure(processConnections(config, 'all'))}`,
    );
    expect(message).toContain(
      `60 endpoints × worker.concurrency 16 = 960, the destinations' loops ${figure(loops)}`,
    );
    expect(message).toContain(`at most ${figure(MAX_PROCESS_CONNECTIONS)} per process`);
  });

  it('accepts the largest configuration within the bound, as serve would size it', () => {
    // serve --role all is the busiest process: the gateway's pool beside the worker's.
    let count = 1;
    while (problem(documentWith(count + 1, 0)) === null) count += 1;
    const config = schemaOnly(documentWith(count, 0));
    expect(processConnections(config, 'all')).toBeLessThanOrEqual(MAX_PROCESS_CONNECTIONS);
    expect(processConnections(config, 'all') + config.worker.concurrency).toBeGreaterThan(
      MAX_PROCESS_CONNECTIONS,
    );
  });

  it('`hookgate config check` exits 2 with the sentence', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookgate-connections-'));
    try {
      const file = join(dir, 'hookgate.yaml');
      const lines = Array.from({ length: 100 }, (_, i) => `  e${i}: {provider: stripe, secrets: [whsec_x]}`);
      writeFileSync(file, `worker: {concurrency: 16}\nendpoints:\n${lines.join('\n')}\n`);
      const run = await runCliInProcess(['config', 'check', '--config', file], { DATABASE_URL: undefined });
      expect(run.code).toBe(2);
      expect(run.output).toContain('PostgreSQL connections: a worker would open up to');
      expect(run.output).toContain('100 endpoints × worker.concurrency 16 = 1 600');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
