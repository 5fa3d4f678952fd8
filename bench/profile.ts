// `node bench/profile.ts <file> [deliveries]`: a text flame graph of a gateway's CPU, from either
//  - a V8 profile (`*.cpuprofile`, from `--cpu-prof`, e.g. BENCH_NODE_OPTIONS in the ingest
//    scenario): the main thread's JavaScript, sampled by wall clock, so a write that gets the
//    process preempted on a busy machine counts as long as the preemption lasts;
//  - `perf script` output of `perf record -g -p <gateway pid>` on a gateway started with
//    `--perf-basic-prof --interpreted-frames-native-stack`: CPU time of every thread, kernel
//    included, which is what /proc (and the ingest report) counts.
// Each sample is charged to the first frame, walking from the leaf towards the root, that belongs
// to one of the project's or its dependencies' components, so Node's internals and the kernel
// count for whoever called them (a socket write under node-postgres is the claim's, one under the
// response is the answer's); Node's own components only take what none of those do. Prints the
// components with their top leaf frames, then the top frames by self and by total time. With
// `deliveries` (acknowledged while the profile ran), times are also given per delivery.
import { readFileSync } from 'node:fs';
import { z } from 'zod';

const cpuProfileSchema = z.object({
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

/** One sample: its frames from the leaf to the root, its weight in microseconds, its thread, when (s). */
interface Sample {
  readonly frames: readonly string[];
  readonly micros: number;
  readonly thread: string;
  readonly at: number;
}

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
    /node:_http|node:net|node:internal\/(stream|streams|http|net)|node:stream|node:events|llhttp|node::http_parser/,
  ],
  [
    'promise and timer plumbing (Node)',
    /node:internal\/(process\/task_queues|timers)|node:timers|RunMicrotasks|PromiseReaction|AsyncFunctionAwait/,
  ],
];

const STARTUP = 'startup (loading modules; not in the shares)';
const STARTUP_FRAME =
  /node:internal\/(modules|deps\/amaro|bootstrap)|^wasm|wasm:\/\/|node::LoadEnvironment|Bootstrapper|BuiltinLoader/;
const GC_FRAME =
  /v8::internal::(Heap::|Scavenger|ScavengeJob|MarkCompactCollector|MinorMarkSweep|ConcurrentMarking|IncrementalMarking|MarkingVisitor|Sweeper|GCTracer|MemoryAllocator|PagedSpace|SemiSpace)|^\(garbage collector\)/;

/** The frames of a V8 profile: each sample with its stack, weighed by the time until the next. */
function fromCpuProfile(text: string): Sample[] {
  const profile = cpuProfileSchema.parse(JSON.parse(text));
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const stacks = new Map<number, string[]>();
  const stackOf = (id: number): string[] => {
    let stack = stacks.get(id);
    if (!stack) {
      stack = [];
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
        const frame = byId.get(at)!.callFrame;
        const where = frame.url.replace(/^file:\/\/.*?\/(node_modules\/|services\/|bench\/)/, '$1');
        stack.push(
          `${frame.functionName || '(anonymous)'} ${where ? `${where}:${frame.lineNumber + 1}` : ''}`.trim(),
        );
      }
      stacks.set(id, stack);
    }
    return stack;
  };
  let at = 0;
  return profile.samples.map((id, index) => {
    const micros = profile.timeDeltas[index] ?? 0;
    at += micros / 1e6;
    return { frames: stackOf(id), micros, thread: 'main', at };
  });
}

/** `perf script` text: a header line per sample, then one frame per line, a blank line after. */
function fromPerfScript(text: string): Sample[] {
  const samples: Sample[] = [];
  let frames: string[] = [];
  let thread = '';
  let period = 0;
  let at = 0;
  let first: number | undefined;
  const flush = () => {
    if (frames.length > 0) samples.push({ frames, micros: period / 1000, thread, at });
    frames = [];
  };
  for (const line of text.split('\n')) {
    if (line.trim() === '') {
      flush();
      continue;
    }
    if (!/^\s/.test(line)) {
      flush();
      // `MainThread  2369  1514.252211:    2004008 cpu-clock:ppp:` — the period is in ns.
      const header = /^(.*?)\s+\d+\s+([\d.]+):\s+(\d+)\s+\S+/.exec(line);
      thread = header?.[1]?.trim() ?? '';
      const time = Number(header?.[2] ?? 0);
      first ??= time;
      at = time - first;
      period = Number(header?.[3] ?? 0);
      continue;
    }
    const frame = /^\s+[0-9a-f]+\s+(.*?)(?:\+0x[0-9a-f]+)?\s+\((.*)\)$/.exec(line);
    if (!frame) continue;
    const symbol = frame[1]!
      .replace(/^JS:[*~^']+/, '')
      .replace(/file:\/\/.*?\/(node_modules\/|services\/|bench\/)/, '$1');
    frames.push(frame[2] === '[kernel.kallsyms]' ? `[kernel] ${symbol}` : symbol);
  }
  flush();
  return samples;
}

function componentOf(sample: Sample): string {
  const { frames } = sample;
  if (frames.some((frame) => STARTUP_FRAME.test(frame))) return STARTUP;
  if (frames.some((frame) => GC_FRAME.test(frame))) return 'garbage collection';
  if (sample.thread !== 'main' && sample.thread !== 'MainThread') {
    return `other threads (${sample.thread}: compiler, libuv)`;
  }
  for (const frame of frames) {
    const found = COMPONENTS.find(([, pattern]) => pattern.test(frame));
    if (found) return found[0];
  }
  for (const frame of frames) {
    const found = NODE_COMPONENTS.find(([, pattern]) => pattern.test(frame));
    if (found) return found[0];
  }
  const leaf = frames[0] ?? '';
  if (leaf === '(program)') return 'V8 and native work outside JavaScript (program)';
  if (/epoll|uv__io_poll|uv_run/.test(frames.join(' ')))
    return 'event loop: polling and I/O callbacks (libuv, kernel)';
  return 'other';
}

function summarise(all: readonly Sample[], deliveries: number | undefined): string[] {
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  const components = new Map<string, number>();
  /** Per component, its samples by leaf frame: where inside it the time is spent. */
  const leavesOf = new Map<string, Map<string, number>>();
  const add = (map: Map<string, number>, key: string, micros: number) =>
    map.set(key, (map.get(key) ?? 0) + micros);
  let busy = 0;
  let idle = 0;
  let kernel = 0;
  for (const sample of all) {
    const leaf = sample.frames[0] ?? '(none)';
    if (leaf === '(idle)') {
      idle += sample.micros;
      continue;
    }
    busy += sample.micros;
    const component = componentOf(sample);
    add(components, component, sample.micros);
    if (component === STARTUP) continue;
    if (leaf.startsWith('[kernel]')) kernel += sample.micros;
    add(self, leaf, sample.micros);
    for (const frame of new Set(sample.frames)) add(total, frame, sample.micros);
    const leaves = leavesOf.get(component) ?? new Map<string, number>();
    add(leaves, leaf, sample.micros);
    leavesOf.set(component, leaves);
  }
  // Shares are of the time after startup: the load, not the loading.
  const work = busy - (components.get(STARTUP) ?? 0);
  const ms = (micros: number) => (micros / 1000).toFixed(0).padStart(7);
  const share = (micros: number) => `${((micros / work) * 100).toFixed(1).padStart(5)} %`;
  const per = (micros: number) => (deliveries ? `${(micros / deliveries).toFixed(1).padStart(7)} µs` : '');
  const top = (map: Map<string, number>, count: number) =>
    [...map.entries()].sort((a, b) => b[1] - a[1]).slice(0, count);
  const row = ([name, micros]: [string, number]) =>
    `  ${ms(micros)} ms ${share(micros)} ${per(micros)}  ${name}`;
  return [
    `busy ${ms(busy)} ms (${ms(work)} ms after startup, of which kernel ${ms(kernel)} ms), idle ${ms(idle)} ms${deliveries ? `, ${deliveries} deliveries` : ''}`,
    '',
    'by component (each sample charged to the first known frame from its leaf):',
    ...top(components, 30).flatMap(([name, micros]) => [
      row([name, micros]),
      ...top(leavesOf.get(name) ?? new Map(), 3).map(
        ([leaf, leafMicros]) => `  ${' '.repeat(27)}${ms(leafMicros)} ms  ${leaf.slice(0, 110)}`,
      ),
    ]),
    '',
    'top frames by self time:',
    ...top(self, 25).map(row),
    '',
    'top frames by total time (self and callees):',
    ...top(total, 40).map(row),
  ];
}

/** Samples per second of the profile, to find the measured window (`busy` per second, in samples). */
function timeline(samples: readonly Sample[]): string[] {
  const perSecond = new Map<number, number>();
  for (const sample of samples) {
    const second = Math.floor(sample.at);
    perSecond.set(second, (perSecond.get(second) ?? 0) + 1);
  }
  return [...perSecond.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([second, count]) => `  ${second} s: ${count} samples`);
}

const args = z
  .tuple([
    z.string(),
    z.coerce.number().int().positive().optional(),
    z
      .string()
      .regex(/^\d+(\.\d+)?-\d+(\.\d+)?$/)
      .optional(),
  ])
  .safeParse(process.argv.slice(2));
if (!args.success) {
  process.stderr.write(
    'usage: node bench/profile.ts <file.cpuprofile | perf script output> [deliveries] [from-to seconds since the first sample]\n' +
      '  without from-to, also prints the samples per second, to find the window of the measured round\n',
  );
  process.exit(2);
}
const [file, deliveries, window] = args.data;
const text = readFileSync(file, 'utf8');
const all = text.trimStart().startsWith('{') ? fromCpuProfile(text) : fromPerfScript(text);
const [from, to] = window ? window.split('-').map(Number) : [0, Number.POSITIVE_INFINITY];
const samples = all.filter((sample) => sample.at >= from! && sample.at < to!);
process.stdout.write(
  `${[...(window ? [`window ${window} s`] : ['samples per second:', ...timeline(all), '']), ...summarise(samples, deliveries)].join('\n')}\n`,
);
