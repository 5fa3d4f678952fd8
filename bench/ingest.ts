import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { freePort } from '../services/core/db/embedded.ts';
import { cpuWindow, perThousand, postgresCpu, postmasterPid, processCpu } from './cpu.ts';
import { drive, type LoadResult, type PreparedRequest } from './load.ts';
import { type BenchDatabase, ROOT, startProcess, stopProcess } from './processes.ts';

/** The ingest goal: accepted deliveries/s at least this share of bare Express's. */
export const INGEST_GOAL = 0.5;

/** The gateway's goal: its CPU per acknowledged delivery at most this multiple of bare Express's per request. */
export const GATEWAY_CPU_GOAL = 1.5;

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

export interface IngestReport {
  readonly scenario: 'ingest';
  readonly settings: { connections: number; seconds: number; rounds: number; duplicateShare: number };
  readonly baseline: readonly MeasuredLoad[];
  readonly gateway: readonly MeasuredLoad[];
  /** One transaction per request, same verifier: context for the ratio. */
  readonly handRolled: readonly MeasuredLoad[];
  readonly handRolledRatio: number;
  readonly meanClaimBatch: number;
  readonly ratio: number;
  /**
   * The gateway's CPU per acknowledged delivery over bare Express's per request, median of the
   * per-round ratios (each round pairs a bare Express run with the gateway run right after it).
   */
  readonly gatewayCpuRatio: number;
  /**
   * CPU seconds per 1 000 acknowledged deliveries, per round, from /proc: the receiving
   * process, PostgreSQL and the load generator (this process).
   */
  readonly cpuPer1k: {
    readonly bareExpress: readonly Record<string, number>[];
    readonly hookgate: readonly Record<string, number>[];
    readonly handRolled: readonly Record<string, number>[];
  };
}

export interface MeasuredLoad extends LoadResult {
  readonly cpuPer1k: Record<string, number>;
}

/** Signed Standard Webhooks deliveries, 20% of them repeats of an earlier one. */
function prepare(count: number, duplicateShare: number): PreparedRequest[] {
  const webhook = new Webhook(SECRET);
  const now = new Date();
  const unique: PreparedRequest[] = [];
  const list: PreparedRequest[] = [];
  for (let i = 0; i < count; i += 1) {
    const earlier = unique[Math.floor(Math.random() * unique.length)];
    if (earlier && Math.random() < duplicateShare) {
      list.push(earlier);
      continue;
    }
    const id = `msg_${randomUUID()}`;
    const body = JSON.stringify({
      type: 'invoice.paid',
      timestamp: now.toISOString(),
      data: { id: `in_${i}`, amount_paid: 4200, currency: 'eur', customer: `cus_${i % 977}` },
    });
    const delivery = {
      body,
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
        'webhook-signature': webhook.sign(id, now, body),
      },
    };
    unique.push(delivery);
    list.push(delivery);
  }
  return list;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/**
 * The receiving process's CPU per 2xx, in microseconds: the gateway's per acknowledged delivery
 * (its claim committed), bare Express's per request. Both from /proc over the same round.
 */
const receiverMicros = (r: MeasuredLoad): number => (r.cpuPer1k.process ?? Number.NaN) * 1000;

export async function ingestScenario(
  database: BenchDatabase,
  settings: { connections: number; seconds: number; rounds: number },
): Promise<IngestReport> {
  const duplicateShare = 0.2;
  // Enough distinct deliveries that the list never wraps around within a round.
  const requests = prepare(Math.max(50_000, settings.seconds * 25_000), duplicateShare);
  const configFile = join(ROOT, 'bench', 'ingest.yaml');
  writeFileSync(
    configFile,
    `${process.env.BENCH_EXTRA_CONFIG ?? ''}endpoints:\n  bench:\n    provider: standard-webhooks\n    secrets: ["${SECRET}"]\n    handler: record\n`,
  );

  const barePort = await freePort();
  const bare = await startProcess(['bench/bare-express.ts'], { PORT: String(barePort) }, /listening/);
  const handPort = await freePort();
  const hand = await startProcess(
    ['bench/hand-rolled-receiver.ts'],
    { PORT: String(handPort), DATABASE_URL: database.url, SECRET },
    /listening/,
  );
  const gatewayPort = await freePort();
  const metricsPort = await freePort();
  const gateway = await startProcess(
    [
      ...(process.env.BENCH_NODE_OPTIONS?.split(' ').filter(Boolean) ?? []),
      'services/cli/main.ts',
      'serve',
      '--role',
      'gateway',
      '--config',
      configFile,
    ],
    {
      DATABASE_URL: database.url,
      PORT: String(gatewayPort),
      METRICS_PORT: String(metricsPort),
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
    },
    `http://127.0.0.1:${gatewayPort}/readyz`,
  );
  const baseline: MeasuredLoad[] = [];
  const handRolled: MeasuredLoad[] = [];
  const measured: MeasuredLoad[] = [];
  const db = new pg.Client({ connectionString: database.url });
  await db.connect();
  const postmaster = await postmasterPid(db);
  await db.end();
  /** One autocannon run with the receiving process's and PostgreSQL's CPU over it. */
  const costed = async (
    pid: number | undefined,
    ...args: Parameters<typeof drive>
  ): Promise<MeasuredLoad> => {
    const done = cpuWindow({
      process: () => processCpu(pid),
      postgres: () => postgresCpu(postmaster),
      generator: () => processCpu(process.pid),
    });
    const result = await drive(...args);
    return { ...result, cpuPer1k: perThousand(done(), result.ok) };
  };
  let meanBatch = Number.NaN;
  try {
    const bareUrl = `http://127.0.0.1:${barePort}/webhooks/bench`;
    const gatewayUrl = `http://127.0.0.1:${gatewayPort}/webhooks/bench`;
    const handUrl = `http://127.0.0.1:${handPort}/webhooks/bench`;
    // Warm both (JIT, pools) for a round's length, then alternate so drift on the machine hits
    // both alike. Two seconds were not enough for the gateway: on a busy machine V8's compiler
    // threads were still optimising its code through the first round (a CPU profile put a fifth of
    // that round's gateway CPU in them, against 5 % in the next rounds), so the first round
    // measured the JIT, not a delivery.
    const warmUp = { connections: settings.connections, seconds: settings.seconds };
    await drive(bareUrl, requests.slice(0, 5000), warmUp);
    await drive(gatewayUrl, prepare(Math.max(5000, settings.seconds * 4000), duplicateShare), warmUp);
    let offset = 0;
    for (let round = 0; round < settings.rounds; round += 1) {
      baseline.push(await costed(bare.pid, bareUrl, requests, settings));
      const slice = requests.slice(offset).concat(requests.slice(0, offset));
      const result = await costed(gateway.pid, gatewayUrl, slice, settings);
      measured.push(result);
      offset += result.requests;
      // Its own database schema, so its duplicates and ours do not interfere.
      handRolled.push(await costed(hand.pid, handUrl, requests, settings));
    }
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const sum = Number(/hookgate_claim_batch_size_sum (\S+)/.exec(metrics)?.[1]);
    const count = Number(/hookgate_claim_batch_size_count (\S+)/.exec(metrics)?.[1]);
    meanBatch = sum / count;
  } finally {
    await stopProcess(gateway);
    await stopProcess(hand);
    await stopProcess(bare);
  }
  return {
    scenario: 'ingest',
    settings: { ...settings, duplicateShare },
    baseline,
    gateway: measured,
    handRolled,
    handRolledRatio: median(handRolled.map((r, i) => r.okPerSecond / baseline[i]!.okPerSecond)),
    meanClaimBatch: meanBatch,
    // Each round pairs a baseline run with a hookgate run right after it; the median of the
    // per-round ratios is robust to the machine's load drifting between rounds.
    ratio: median(measured.map((r, i) => r.okPerSecond / baseline[i]!.okPerSecond)),
    gatewayCpuRatio: median(measured.map((r, i) => receiverMicros(r) / receiverMicros(baseline[i]!))),
    cpuPer1k: {
      bareExpress: baseline.map((r) => r.cpuPer1k),
      hookgate: measured.map((r) => r.cpuPer1k),
      handRolled: handRolled.map((r) => r.cpuPer1k),
    },
  };
}

const fmt = (n: number, digits = 0) => n.toFixed(digits).padStart(9);

/** CPU seconds of one delivery, all three processes together. */
function cpuPerDelivery(r: MeasuredLoad): number {
  const { process: receiver = Number.NaN, postgres = Number.NaN, generator = Number.NaN } = r.cpuPer1k;
  return (receiver + postgres + generator) / 1000;
}

/** Cores the three processes kept busy during the round. */
function busyCores(r: MeasuredLoad): number {
  return r.okPerSecond * cpuPerDelivery(r);
}

/**
 * What the CPU cost per delivery allows on this machine: all cores busy with the receiver,
 * PostgreSQL and the generator. Next to the measured rates it tells whether a rate is held by
 * CPU (the machine is full) or by waiting (claim cycles, round trips).
 */
function ceilingLines(report: IngestReport): string[] {
  const cores = availableParallelism();
  const ceiling = (rounds: readonly MeasuredLoad[]) => median(rounds.map((r) => cores / cpuPerDelivery(r)));
  const hookgate = ceiling(report.gateway);
  const bare = ceiling(report.baseline);
  const micros = (rounds: readonly MeasuredLoad[], part: string) =>
    median(rounds.map((r) => r.cpuPer1k[part] ?? Number.NaN)) * 1000;
  // With both sides CPU-bound, the ratio is bare's CPU per delivery over hookgate's. So the
  // goal fixes what the gateway and PostgreSQL may spend together, whatever the split.
  const bareTotal = median(report.baseline.map(cpuPerDelivery)) * 1e6;
  const generator = micros(report.gateway, 'generator');
  const gateway = micros(report.gateway, 'process');
  const postgres = micros(report.gateway, 'postgres');
  const budget = bareTotal / INGEST_GOAL - generator;
  return [
    `  CPU ceiling on ${cores} cores (cores / CPU per delivery of receiver + postgres + generator, median of rounds): ` +
      `hookgate ${hookgate.toFixed(0)}/s, bare express ${bare.toFixed(0)}/s, ratio ${(hookgate / bare).toFixed(2)}`,
    `  CPU budget for ${INGEST_GOAL} (bare express's ${bareTotal.toFixed(0)} us per delivery / ${INGEST_GOAL}, less hookgate's generator ${generator.toFixed(0)} us): ` +
      `gateway + postgres <= ${budget.toFixed(0)} us; this run ${gateway.toFixed(0)} + ${postgres.toFixed(0)} = ${(gateway + postgres).toFixed(0)} us (medians of rounds)`,
  ];
}

/** Each round's gateway CPU beside the bare Express round it is paired with, and their ratio. */
function gatewayCpuLines(report: IngestReport): string[] {
  const ratios = report.gateway.map((r, i) => receiverMicros(r) / receiverMicros(report.baseline[i]!));
  return [
    `  receiver CPU per 2xx, us (gateway: per acknowledged delivery; bare express: per request), by round: ${report.gateway
      .map(
        (r, i) =>
          `${receiverMicros(r).toFixed(0)} vs ${receiverMicros(report.baseline[i]!).toFixed(0)} (${ratios[i]!.toFixed(2)}x)`,
      )
      .join(', ')}`,
    `  gateway CPU ratio, median of rounds (gateway us per acknowledged delivery / bare express us per request): ${report.gatewayCpuRatio.toFixed(2)}   (goal <= ${GATEWAY_CPU_GOAL})`,
  ];
}

export function renderIngest(report: IngestReport): string[] {
  const { connections, seconds, rounds } = report.settings;
  const row = (label: string, r: MeasuredLoad) =>
    `  ${label}${fmt(r.okPerSecond)} ${fmt(r.p50Ms, 1)} ${fmt(r.p99Ms, 1)} ${fmt(r.non2xx)} ${fmt(r.errors)} ${fmt(r.cpuPer1k.process ?? Number.NaN, 3)} ${fmt(r.cpuPer1k.postgres ?? Number.NaN, 3)} ${fmt(r.cpuPer1k.generator ?? Number.NaN, 3)}  ${fmt(busyCores(r), 2)}`;
  return [
    `ingest: ${connections} connections, ${seconds}s x ${rounds} rounds, 20% duplicates, signed Standard Webhooks`,
    '  target              2xx/s   p50 ms   p99 ms   non-2xx  errors  CPU s/1k: receiver  postgres generator  cores busy',
    ...report.baseline.map((r) => row('bare express ', r)),
    ...report.gateway.map((r) => row('hookgate     ', r)),
    ...report.handRolled.map((r) => row('hand-rolled  ', r)),
    `  hand-rolled (1 tx/request) / bare express, median of rounds: ${report.handRolledRatio.toFixed(2)}`,
    `  mean claim batch: ${report.meanClaimBatch.toFixed(1)} deliveries per transaction`,
    `  ratio, median of rounds (hookgate 2xx/s / bare express 2xx/s): ${report.ratio.toFixed(2)}   (goal >= ${INGEST_GOAL})`,
    ...gatewayCpuLines(report),
    ...ceilingLines(report),
  ];
}
