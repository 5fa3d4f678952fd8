import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  destinationLoopConnections,
  MIGRATION_CONNECTIONS,
  processConnections,
} from '../../../services/core/config/connections.ts';
import { parseConfig } from '../../../services/core/config/load.ts';

// load/README.md gives the connection arithmetic and its worked examples in prose; the code that
// `serve` and the chart use is services/core/config/connections.ts. The README's figures are computed
// here from the code, so a change to either that leaves the other behind fails (the README once
// kept `E × (worker.concurrency + 1) + … + 1` long after the code had moved on).
const text = readFileSync(new URL('../../../load/README.md', import.meta.url), 'utf8');
const between = (from: string, to: string) =>
  text.slice(text.indexOf(from), text.indexOf(to, text.indexOf(from)));
// The two passages that give the arithmetic: "### Connections" and the sizing guide's "**Connections.**".
const readme = [
  between('### Connections', '**Through PgBouncer**'),
  between('**Connections.** Each process', '## Measured figures'),
]
  .join('\n')
  .replace(/\s+/g, ' ');

const endpoint = { provider: 'stripe', secrets: ['whsec_x'] };
function configWith(endpoints: number, overrides: Record<string, unknown> = {}) {
  const names = Array.from({ length: endpoints }, (_, i) => [`e${i}`, endpoint]);
  return parseConfig({ endpoints: Object.fromEntries(names), ...overrides }, {});
}
const worker = (endpoints: number, overrides?: Record<string, unknown>) =>
  processConnections(configWith(endpoints, overrides), 'worker');
const gateway = processConnections(configWith(1), 'gateway');

describe('load/README.md "Connections" says what connections.ts computes', () => {
  it('the per-process figures at the defaults', () => {
    expect(gateway).toBe(12);
    expect(processConnections(configWith(1), 'all')).toBe(21);
    expect(MIGRATION_CONNECTIONS).toBe(2);
    expect(readme).toContain(`| \`database.poolSize\` + 2 (pg-boss) | ${gateway} |`);
    expect(readme).toContain(`| ${worker(1)} with one endpoint, ${worker(2)} with two |`);
    expect(readme).toContain(`= **12** by default`);
    expect(readme).toContain(
      `for E endpoints: ${worker(1)} with one endpoint, ${worker(2)} with two, ${worker(3)} with three`,
    );
    expect(readme).toContain(
      `| \`database.poolSize\` + the worker's figure | ${processConnections(configWith(1), 'all')} |`,
    );
  });

  it('the worker formula, E × worker.concurrency + 2, + 6 + 1, off the defaults too', () => {
    const formula = (e: number, c: number, pool = 0) => Math.max(pool, e * c + 2) + 6 + 1;
    expect(readme).toContain(
      'max(`worker.poolSize`, endpoints × `worker.concurrency` + 2 + D) + 6 (pg-boss) + 1 (wake-up listener)',
    );
    expect(readme).toContain('= **2E + 9** by default');
    for (const e of [1, 2, 3]) expect(worker(e)).toBe(2 * e + 9);
    for (const [e, c, pool] of [
      [3, 5, 0],
      [1, 1, 0],
      [2, 4, 40],
    ] as const) {
      const overrides = { worker: { concurrency: c, ...(pool ? { poolSize: pool } : {}) } };
      expect(worker(e, overrides)).toBe(formula(e, c, pool));
    }
  });

  it('destinations: D = 1 + per destination 1 (+ concurrency with a breaker), on top of the loops', () => {
    const destinations = (list: Record<string, unknown>) =>
      parseConfig({ endpoints: { e0: { ...endpoint, destinations: list } } }, {});
    const plain = { url: 'http://a.internal/' };
    const base = worker(1);
    expect(processConnections(destinations({}), 'worker')).toBe(base);
    expect(processConnections(destinations({ a: plain }), 'worker')).toBe(base + 2);
    expect(
      processConnections(destinations({ a: plain, b: { ...plain, rateLimit: { perSecond: 5 } } }), 'worker'),
    ).toBe(base + 3);
    const withBreaker = { a: plain, b: { ...plain, breaker: { failures: 5 } } };
    expect(destinationLoopConnections(destinations(withBreaker))).toBe(7);
    expect(processConnections(destinations(withBreaker), 'worker')).toBe(18);
    expect(
      destinationLoopConnections(
        destinations({ b: { ...plain, concurrency: 16, breaker: { failures: 5 } } }),
      ),
    ).toBe(1 + 1 + 16);
    // A configured pool above the loops' figure still wins; below it, the loops' figure does.
    const pooled = parseConfig(
      { endpoints: { e0: { ...endpoint, destinations: withBreaker } }, worker: { poolSize: 40 } },
      {},
    );
    expect(processConnections(pooled, 'worker')).toBe(40 + 7);
    expect(readme).toContain('D = 1 + 1 + (1 + 4) = 7, so a worker holds 18');
    expect(readme).toContain('× `worker.concurrency` + 2 + D) + 6 (pg-boss) + 1 (wake-up listener)');
  });

  it('the worked examples for a release', () => {
    const pods = (replicas: number) => replicas + Math.ceil(replicas / 4);
    const defaults = pods(2) * gateway + pods(2) * worker(1) + MIGRATION_CONNECTIONS;
    expect(readme).toContain(`come to 3 × 12 + 3 × ${worker(1)} + 2 = ${defaults}`);
    const fullScale = pods(10) * gateway + pods(10) * worker(1) + MIGRATION_CONNECTIONS + 1;
    expect(readme).toContain(`to 13 × 12 + 13 × ${worker(1)} + 2 + 1 = ${fullScale}`);
    // The sizing guide counts pods as the chart does, the surge included.
    expect(readme).toContain(`come to 13 × 12 + 13 × ${worker(1)} + 2 + 1 = **${fullScale} in all**`);
    const fiveAndFive = pods(5) * gateway + pods(5) * worker(1) + MIGRATION_CONNECTIONS;
    expect(readme).toContain(`(7 + 7 pods with the surge: 7 × 12 + 7 × ${worker(1)} + 2 = ${fiveAndFive})`);
    expect(fiveAndFive).toBeGreaterThan(97);
    const threeAndThree = pods(3) * gateway + pods(3) * worker(1) + 5;
    expect(readme).toContain(`need 4 × 12 + 4 × ${worker(1)} + 5 = ${threeAndThree}`);
    expect(threeAndThree).toBeLessThanOrEqual(97);
  });
});

// The same figures appear beside the chart: each place that gives the full-scale or the default
// release's connections must give what the code computes (NOTES.txt's own are rendered and
// compared by test/chart/notes.test.ts).
describe('the release connection figures outside load/README.md', () => {
  const read = (path: string) =>
    readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8').replace(/\s+/g, ' ');
  const PLACES = [
    'load/README.md',
    'charts/hookgate/README.md',
    'charts/hookgate/values.yaml',
    'charts/hookgate/templates/NOTES.txt',
    'docs/kubernetes.md',
    'README.md',
  ];
  const pods = (replicas: number) => replicas + Math.ceil(replicas / 4);

  it('the gateway HPA at 10 with KEDA at 10 workers: everywhere the same, computed figure', () => {
    const fullScale = pods(10) * gateway + pods(10) * worker(1) + MIGRATION_CONNECTIONS + 1;
    const found = PLACES.flatMap((path) =>
      [...read(path).matchAll(/gateway HPA at 10 with KEDA at 10 workers[^=]*= \**(\d+)/g)].map((match) => ({
        path,
        figure: Number(match[1]),
      })),
    );
    expect(found.map(({ path }) => path)).toEqual([
      'load/README.md',
      'load/README.md',
      'charts/hookgate/README.md',
    ]);
    for (const place of found) expect(place, place.path).toEqual({ path: place.path, figure: fullScale });
  });

  it('the chart defaults: everywhere the same, computed figure', () => {
    const defaults = pods(2) * gateway + pods(2) * worker(1) + MIGRATION_CONNECTIONS;
    const found = PLACES.flatMap((path) =>
      [...read(path).matchAll(/\(2 gateways, 2 workers, one endpoint\) come to [^=]*= (\d+)/g)].map(
        (match) => ({ path, figure: Number(match[1]) }),
      ),
    );
    expect(found.map(({ path }) => path)).toEqual(['load/README.md', 'charts/hookgate/README.md']);
    for (const place of found) expect(place, place.path).toEqual({ path: place.path, figure: defaults });
  });

  it('no other figure is given as the whole release’s connections', () => {
    for (const path of PLACES) {
      const totals = [...read(path).matchAll(/\*\*(\d+) in all\*\*/g)].map((match) => Number(match[1]));
      expect(
        totals.every((total) => total === pods(10) * gateway + pods(10) * worker(1) + 3),
        path,
      ).toBe(true);
    }
  });
});
