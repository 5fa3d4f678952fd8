// What every hookgate k6 script shares: parameters from the environment, the five scenarios,
// the thresholds that fail a run, and the iteration that sends one arrival of the mix and
// records each acknowledged delivery as a console line for `hookgate verify --sent`.
// Runs on k6 >= 0.57 (TypeScript without a build step); see load/README.md.
import crypto from 'k6/crypto';
import exec from 'k6/execution';
import http, { type ObjectBatchRequest, type RefinedResponse, type ResponseType } from 'k6/http';
import { Counter, Trend } from 'k6/metrics';
import type { Options, Scenario } from 'k6/options';
import { ackRecord, mixSettings, type ProviderName, planStep, type Run, signEvent } from '../lib/mix.ts';
import type { Hmac } from '../lib/sign.ts';

const k6Hmac: Hmac = (key, message, encoding) => crypto.hmac('sha256', key, message, encoding);

function env(name: string, fallback: string): string {
  const value = __ENV[name];
  return value === undefined || value === '' ? fallback : value;
}

function number(name: string, fallback: number): number {
  const text = env(name, String(fallback));
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0)
    throw new Error(`${name} must be a non-negative number, got ${text}`);
  return value;
}

export const SCENARIOS = ['smoke', 'steady', 'ramp', 'spike', 'soak'] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

function scenarioName(): ScenarioName {
  const name = env('SCENARIO', 'smoke');
  const found = SCENARIOS.find((candidate) => candidate === name);
  if (!found) throw new Error(`SCENARIO must be one of ${SCENARIOS.join(', ')}, got ${name}`);
  return found;
}

/** VUs are only a pool for arrivals: an arrival-rate executor starts iterations on schedule. */
function vus(rate: number): { preAllocatedVUs: number; maxVUs: number } {
  const preAllocatedVUs = number('PRE_VUS', Math.max(10, Math.ceil(rate / 10)));
  return { preAllocatedVUs, maxVUs: number('MAX_VUS', Math.max(preAllocatedVUs, Math.ceil(rate))) };
}

export function scenarioFor(name: ScenarioName): Scenario {
  const rate = number('RATE', 100);
  switch (name) {
    case 'smoke':
      return {
        executor: 'constant-arrival-rate',
        rate: number('RATE', 5),
        timeUnit: '1s',
        duration: env('DURATION', '30s'),
        preAllocatedVUs: 5,
        maxVUs: 20,
      };
    case 'steady':
      return {
        executor: 'constant-arrival-rate',
        rate,
        timeUnit: '1s',
        duration: env('DURATION', '5m'),
        ...vus(rate),
      };
    case 'ramp': {
      const top = number('RAMP_TO', rate * 20);
      return {
        executor: 'ramping-arrival-rate',
        startRate: number('START_RATE', Math.max(1, Math.floor(rate / 2))),
        timeUnit: '1s',
        stages: [{ target: top, duration: env('DURATION', '10m') }],
        ...vus(top),
      };
    }
    case 'spike': {
      const peak = number('PEAK', rate * 10);
      return {
        executor: 'ramping-arrival-rate',
        startRate: rate,
        timeUnit: '1s',
        stages: [
          { target: rate, duration: '1m' },
          { target: peak, duration: '10s' },
          { target: peak, duration: env('SPIKE_FOR', '1m') },
          { target: rate, duration: '10s' },
          { target: rate, duration: '2m' },
        ],
        ...vus(peak),
      };
    }
    case 'soak':
      return {
        executor: 'constant-arrival-rate',
        rate,
        timeUnit: '1s',
        duration: env('DURATION', '2h'),
        ...vus(rate),
      };
  }
}

const non2xx = new Counter('hookgate_non_2xx');
const acked = new Counter('hookgate_acked');
const ackMs = new Trend('hookgate_ack_ms', true);

export interface Script {
  readonly options: Options;
  setup(): Run;
  iteration(run: Run): void;
}

/** A k6 script for one endpoint of `provider`; the entry files export its three parts. */
export function makeScript(provider: ProviderName, defaultEndpoint: string): Script {
  const name = scenarioName();
  const ackP99 = number('ACK_P99_MS', 500);
  const baseUrl = env('BASE_URL', 'http://127.0.0.1:8080').replace(/\/+$/, '');
  const endpoint = env('ENDPOINT', defaultEndpoint);
  const secret = env('SECRET', '');
  const mix = mixSettings({
    laterDuplicates: number('LATER_DUPLICATES', 0.1),
    concurrentDuplicates: number('CONCURRENT_DUPLICATES', 0.05),
    maxLag: number('MAX_LAG', 200),
    versionsPerEntity: number('VERSIONS_PER_ENTITY', 4),
  });
  const url = `${baseUrl}/webhooks/${endpoint}`;
  // Only 2xx counts as success (k6 counts 3xx as success by default).
  http.setResponseCallback(http.expectedStatuses({ min: 200, max: 299 }));

  const options: Options = {
    scenarios: { [name]: scenarioFor(name) },
    thresholds: {
      // A valid delivery that was not acknowledged fails the run.
      hookgate_non_2xx: ['count==0'],
      http_req_failed: ['rate==0'],
      // Past saturation the ack p99 climbs: the ramp stops there, 30 s after crossing.
      hookgate_ack_ms: [
        name === 'ramp'
          ? { threshold: `p(99)<${ackP99}`, abortOnFail: true, delayAbortEval: '30s' }
          : `p(99)<${ackP99}`,
      ],
    },
    summaryTrendStats: ['avg', 'med', 'p(90)', 'p(99)', 'max'],
  };

  return {
    options,
    setup(): Run {
      if (secret === '')
        throw new Error('SECRET is not set: pass the endpoint signing secret with -e SECRET=...');
      return {
        id: env('RUN_ID', `k6${Date.now().toString(36)}`),
        startedAt: Math.floor(Date.now() / 1000),
      };
    },
    iteration(run: Run): void {
      const step = planStep(provider, run, exec.scenario.iterationInTest, mix);
      const request = (): ObjectBatchRequest => ({
        method: 'POST',
        url,
        body: step.event.body,
        params: {
          headers: signEvent(provider, k6Hmac, secret, step.event, Math.floor(Date.now() / 1000)),
          tags: { delivery: step.kind },
        },
      });
      // Both copies of a concurrent duplicate leave at once, on separate connections.
      const responses: RefinedResponse<ResponseType | undefined>[] =
        step.copies === 2
          ? http.batch([request(), request()])
          : [http.request('POST', url, step.event.body, request().params)];
      for (const response of responses) {
        ackMs.add(response.timings.duration, { delivery: step.kind });
        if (response.status >= 200 && response.status < 300) {
          acked.add(1, { delivery: step.kind });
          // One JSON line per acknowledged delivery: `k6 run --console-output FILE` collects them.
          console.log(JSON.stringify(ackRecord(endpoint, provider, step, response.status)));
        } else {
          non2xx.add(1, { status: String(response.status), delivery: step.kind });
          console.warn(
            `${step.event.id}: HTTP ${response.status} ${String(response.body ?? '').slice(0, 200)}`,
          );
        }
      }
    },
  };
}
