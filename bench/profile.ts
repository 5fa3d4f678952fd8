// `node bench/profile.ts <file.cpuprofile> [deliveries]`: a text flame graph of a gateway's CPU
// profile (`--cpu-prof`, e.g. from BENCH_NODE_OPTIONS in the ingest scenario). Each sample is
// charged to the first frame, walking from the leaf towards the root, that belongs to a known
// component, so Node's internals count for whoever called them (a socket write under
// node-postgres is the claim's, one under the response is the answer's). Prints the components,
// then the top frames by self and by total time. With `deliveries` (the acknowledged deliveries
// while the profile ran), times are also given per delivery.
import { readFileSync } from 'node:fs';
import { z } from 'zod';

const profileSchema = z.object({
  nodes: z.array(
    z.object({
      id: z.number(),
      callFrame: z.object({ functionName: z.string(), url: z.string(), lineNumber: z.number() }),
      children: z.array(z.number()).optional(),
    }),
  ),
  samples: z.array(z.number()),
  timeDeltas: z.array(z.number()),
});

/**
 * The project's and its dependencies' components, matched from the leaf: the first frame that
 * matches one takes the sample. Node's own (NODE_COMPONENTS) only take a sample none of these do.
 */
const COMPONENTS: readonly (readonly [string, RegExp])[] = [
  [
    'logging (pino, sonic-boom)',
    /\/(pino|sonic-boom|pino-std-serializers|fast-redact)\/|core\/logging\.ts|refusal-log\.ts/,
  ],
  ['metrics (prom-client)', /\/prom-client\/|core\/metrics\.ts/],
  ['tracing (OpenTelemetry)', /@opentelemetry|core\/tracing\.ts/],
  ['schema validation (zod)', /\/zod\//],
  [
    'verification (HMAC, headers)',
    /core\/providers\/(?!parse-body|extract|json-pointer)|node:crypto|node:internal\/crypto/,
  ],
  ['body parsing (UTF-8, JSON)', /providers\/parse-body\.ts/],
  ['event identity (id, type)', /providers\/(extract|json-pointer)\.ts|inbox\/identity-checks\.ts/],
  [
    'claim: batching, SQL document, node-postgres',
    /\/(pg|pg-pool|pg-protocol|pg-types|postgres-array)\/|core\/inbox\/|core\/db\/|queue\/wakeup/,
  ],
  ['HTTP response (answer)', /gateway\/answer\.ts/],
  ['body reading', /gateway\/(read-body|body-reservation|body-budget)\.ts/],
  ['gateway glue (route, receive, timers)', /gateway\/(app|receive|gateway|drain|client-errors)\.ts/],
  ['Express (not on the webhook path)', /\/(express|router|body-parser|finalhandler)\//],
];

const NODE_COMPONENTS: readonly (readonly [string, RegExp])[] = [
  [
    'HTTP request parsing and sockets (Node)',
    /node:_http|node:net|node:internal\/(stream|streams|http|net)|node:stream|node:events/,
  ],
  ['promise and timer plumbing (Node)', /node:internal\/(process\/task_queues|timers)|node:timers/],
];

type Profile = z.infer<typeof profileSchema>;

const STARTUP = 'startup (loading modules; not in the shares)';

function frameName(frame: Profile['nodes'][number]['callFrame']): string {
  const where = frame.url.replace(/^file:\/\/.*?\/(node_modules\/|services\/|bench\/)/, '$1');
  return `${frame.functionName || '(anonymous)'} ${where ? `${where}:${frame.lineNumber + 1}` : ''}`.trim();
}

function summarise(profile: Profile, deliveries: number | undefined): string[] {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  const components = new Map<string, number>();
  /** Per component, its samples by leaf frame: where inside it the time is spent. */
  const leavesOf = new Map<string, Map<string, number>>();
  let busy = 0;
  let idle = 0;
  const startup = (id: number): boolean => {
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      if (/node:internal\/(modules|deps\/amaro)|^wasm:/.test(byId.get(at)!.callFrame.url)) return true;
    }
    return false;
  };
  profile.samples.forEach((id, index) => {
    const micros = profile.timeDeltas[index] ?? 0;
    const leaf = byId.get(id)!;
    const leafName = leaf.callFrame.functionName;
    if (leafName === '(idle)') {
      idle += micros;
      return;
    }
    busy += micros;
    self.set(frameName(leaf.callFrame), (self.get(frameName(leaf.callFrame)) ?? 0) + micros);
    const seen = new Set<string>();
    // Loading the code happens once, before the load: charged to itself, whatever it calls.
    let component: string | undefined = startup(id) ? STARTUP : undefined;
    let fallback: string | undefined;
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at)!.callFrame;
      const name = frameName(frame);
      if (!seen.has(name)) {
        seen.add(name);
        total.set(name, (total.get(name) ?? 0) + micros);
      }
      component ??= COMPONENTS.find(([, pattern]) => pattern.test(frame.url))?.[0];
      fallback ??= NODE_COMPONENTS.find(([, pattern]) => pattern.test(frame.url))?.[0];
    }
    component ??= fallback;
    component ??=
      leafName === '(garbage collector)'
        ? 'garbage collection'
        : leafName === '(program)'
          ? 'V8 and native work outside JavaScript (program)'
          : 'other';
    components.set(component, (components.get(component) ?? 0) + micros);
    const leaves = leavesOf.get(component) ?? new Map<string, number>();
    leaves.set(frameName(leaf.callFrame), (leaves.get(frameName(leaf.callFrame)) ?? 0) + micros);
    leavesOf.set(component, leaves);
  });
  // Shares are of the time after startup: the load, not the loading.
  const work = busy - (components.get(STARTUP) ?? 0);
  const ms = (micros: number) => (micros / 1000).toFixed(0).padStart(7);
  const share = (micros: number) => `${((micros / work) * 100).toFixed(1).padStart(5)} %`;
  const per = (micros: number) => (deliveries ? `${(micros / deliveries).toFixed(1).padStart(7)} µs` : '');
  const top = (map: Map<string, number>, count: number) =>
    [...map.entries()].sort((a, b) => b[1] - a[1]).slice(0, count);
  return [
    `busy ${ms(busy)} ms (${ms(work)} ms after startup), idle ${ms(idle)} ms${deliveries ? `, ${deliveries} deliveries` : ''}`,
    '',
    'by component (each sample charged to the first known frame from its leaf):',
    ...top(components, COMPONENTS.length + NODE_COMPONENTS.length + 4).flatMap(([name, micros]) => [
      `  ${ms(micros)} ms ${share(micros)} ${per(micros)}  ${name}`,
      ...top(leavesOf.get(name)!, 3).map(
        ([leaf, leafMicros]) => `  ${' '.repeat(27)}${ms(leafMicros)} ms  ${leaf}`,
      ),
    ]),
    '',
    'top frames by self time:',
    ...top(self, 25).map(([name, micros]) => `  ${ms(micros)} ms ${share(micros)} ${per(micros)}  ${name}`),
    '',
    'top frames by total time (self and callees):',
    ...top(total, 40).map(([name, micros]) => `  ${ms(micros)} ms ${share(micros)} ${per(micros)}  ${name}`),
  ];
}

const [file, deliveries] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node bench/profile.ts <file.cpuprofile> [deliveries]\n');
  process.exit(2);
}
const profile = profileSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
const count = deliveries === undefined ? undefined : z.coerce.number().int().positive().parse(deliveries);
process.stdout.write(`${summarise(profile, count).join('\n')}\n`);
