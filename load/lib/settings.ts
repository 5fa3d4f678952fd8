// The k6 scripts' parameters, scenarios and thresholds, built from an environment passed in
// (k6's __ENV in the scripts, a plain object in the tests), so all of it is tested under Node.
import type { Options, Scenario } from 'k6/options';
import { type MixSettings, mixSettings, PROVIDERS, type ProviderName, type Target } from './mix.ts';

export type Env = Readonly<Record<string, string | undefined>>;

export const SCENARIOS = ['smoke', 'steady', 'ramp', 'spike', 'soak'] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

/** Go durations as k6 reads them: 30s, 5m, 1h30m, 500ms. */
const DURATION = /^(\d+(\.\d+)?(ms|s|m|h))+$/;

/** One endpoint a script posts to, with the secret that signs its deliveries. */
export interface ScriptTarget extends Target {
  /** `<BASE_URL>/webhooks/<endpoint>` */
  readonly url: string;
  /** Empty when the variable is unset: the script's setup refuses to start, naming it. */
  readonly secret: string;
  /** The environment variable the secret is read from. */
  readonly secretVariable: string;
}

/** k6's `http.expectedStatuses` arguments: the answers that do not count in http_req_failed. */
export type ExpectedStatus = number | { readonly min: number; readonly max: number };

export interface ScriptSettings {
  readonly scenario: ScenarioName;
  readonly options: Options;
  /** Arrivals go round-robin over these (one target for the single-provider scripts). */
  readonly targets: readonly ScriptTarget[];
  readonly mix: MixSettings;
  readonly expectedStatuses: readonly ExpectedStatus[];
  /** `503 overloaded` is the gateway's documented back-pressure, counted apart (the spike). */
  readonly backpressureExpected: boolean;
}

/** The three endpoints of load/README.md, as `endpoint,provider,SECRET_VARIABLE` entries. */
export const DEFAULT_TARGETS =
  'stripe,stripe,STRIPE_SECRET things,standard-webhooks,THINGS_SECRET github,github,GITHUB_SECRET';

const ENDPOINT_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function reader(env: Env) {
  const text = (name: string, fallback: string): string => {
    const value = env[name];
    return value === undefined || value === '' ? fallback : value;
  };
  const number = (name: string, fallback: number): number => {
    const raw = text(name, String(fallback));
    const value = Number(raw);
    if (!Number.isFinite(value) || value < 0)
      throw new Error(`${name} must be a non-negative number, got ${raw}`);
    return value;
  };
  const positive = (name: string, fallback: number): number => {
    const value = number(name, fallback);
    if (value <= 0) throw new Error(`${name} must be above 0, got ${value}`);
    return value;
  };
  const duration = (name: string, fallback: string): string => {
    const value = text(name, fallback);
    if (!DURATION.test(value))
      throw new Error(`${name} must be a duration such as 30s, 5m or 1h30m, got ${value}`);
    return value;
  };
  return { text, number, positive, duration };
}

export function scenarioFor(name: ScenarioName, env: Env): Scenario {
  const read = reader(env);
  /** VUs are only a pool for arrivals: an arrival-rate executor starts iterations on schedule. */
  const vus = (rate: number) => {
    const preAllocatedVUs = read.positive('PRE_VUS', Math.max(10, Math.ceil(rate / 10)));
    return { preAllocatedVUs, maxVUs: read.positive('MAX_VUS', Math.max(preAllocatedVUs, Math.ceil(rate))) };
  };
  switch (name) {
    case 'smoke':
      return {
        executor: 'constant-arrival-rate',
        rate: read.positive('RATE', 5),
        timeUnit: '1s',
        duration: read.duration('DURATION', '30s'),
        preAllocatedVUs: 5,
        maxVUs: 20,
      };
    case 'steady': {
      const rate = read.positive('RATE', 100);
      return {
        executor: 'constant-arrival-rate',
        rate,
        timeUnit: '1s',
        duration: read.duration('DURATION', '5m'),
        ...vus(rate),
      };
    }
    case 'ramp': {
      const rate = read.positive('RATE', 100);
      const top = read.positive('RAMP_TO', rate * 20);
      return {
        executor: 'ramping-arrival-rate',
        startRate: read.positive('START_RATE', Math.max(1, Math.floor(rate / 2))),
        timeUnit: '1s',
        stages: [{ target: top, duration: read.duration('DURATION', '10m') }],
        ...vus(top),
      };
    }
    case 'spike': {
      const rate = read.positive('RATE', 100);
      const peak = read.positive('PEAK', rate * 10);
      return {
        executor: 'ramping-arrival-rate',
        startRate: rate,
        timeUnit: '1s',
        stages: [
          { target: rate, duration: '1m' },
          { target: peak, duration: '10s' },
          { target: peak, duration: read.duration('SPIKE_FOR', '1m') },
          { target: rate, duration: '10s' },
          { target: rate, duration: '2m' },
        ],
        ...vus(peak),
      };
    }
    case 'soak': {
      const rate = read.positive('RATE', 100);
      return {
        executor: 'constant-arrival-rate',
        rate,
        timeUnit: '1s',
        duration: read.duration('DURATION', '2h'),
        ...vus(rate),
      };
    }
  }
}

function baseUrl(env: Env): string {
  const url = reader(env).text('BASE_URL', 'http://127.0.0.1:8080').replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]+/.test(url)) throw new Error(`BASE_URL must be an http(s) URL, got ${url}`);
  return url;
}

/**
 * `TARGETS`: space-separated `endpoint,provider,SECRET_VARIABLE` entries (the Node driver's
 * `--target` form); each secret is read from the variable it names, never from the entry.
 */
export function parseTargets(text: string, env: Env, base: string): ScriptTarget[] {
  const entries = text
    .trim()
    .split(/\s+/)
    .filter((entry) => entry !== '');
  if (entries.length === 0)
    throw new Error('TARGETS must name at least one endpoint,provider,SECRET_VARIABLE');
  return entries.map((entry) => {
    const [endpoint = '', provider = '', secretVariable = '', ...rest] = entry.split(',');
    if (rest.length > 0 || !ENDPOINT_NAME.test(endpoint) || !VARIABLE_NAME.test(secretVariable)) {
      throw new Error(`TARGETS entry ${entry} is not endpoint,provider,SECRET_VARIABLE`);
    }
    const known = PROVIDERS.find((name) => name === provider);
    if (!known) throw new Error(`TARGETS entry ${entry}: provider must be one of ${PROVIDERS.join(', ')}`);
    return {
      endpoint,
      provider: known,
      url: `${base}/webhooks/${endpoint}`,
      secret: env[secretVariable] ?? '',
      secretVariable,
    };
  });
}

function settingsFor(env: Env, targets: readonly ScriptTarget[]): ScriptSettings {
  const read = reader(env);
  const name = read.text('SCENARIO', 'smoke');
  const scenario = SCENARIOS.find((candidate) => candidate === name);
  if (!scenario) throw new Error(`SCENARIO must be one of ${SCENARIOS.join(', ')}, got ${name}`);
  const ackP99 = read.positive('ACK_P99_MS', 500);
  // Past capacity the gateway sheds load with `503 overloaded`, as documented: in a spike that
  // is the expected answer, counted in hookgate_backpressure; any other non-2xx still fails.
  const backpressureExpected = scenario === 'spike';
  const options: Options = {
    scenarios: { [scenario]: scenarioFor(scenario, env) },
    thresholds: {
      // A valid delivery that was not acknowledged fails the run.
      hookgate_non_2xx: ['count==0'],
      http_req_failed: ['rate==0'],
      // Past saturation the ack p99 climbs: the ramp stops there, 30 s after crossing.
      hookgate_ack_ms: [
        scenario === 'ramp'
          ? { threshold: `p(99)<${ackP99}`, abortOnFail: true, delayAbortEval: '30s' }
          : `p(99)<${ackP99}`,
      ],
      // An iteration k6 could not start (no free VU) is an arrival that was never offered: the
      // rate asked for was not the rate sent, and the run says nothing about it.
      dropped_iterations: ['count==0'],
    },
    summaryTrendStats: ['avg', 'med', 'p(90)', 'p(99)', 'max'],
  };
  return {
    scenario,
    options,
    targets,
    mix: mixSettings({
      laterDuplicates: read.number('LATER_DUPLICATES', 0.1),
      concurrentDuplicates: read.number('CONCURRENT_DUPLICATES', 0.05),
      maxLag: read.positive('MAX_LAG', 200),
      versionsPerEntity: read.positive('VERSIONS_PER_ENTITY', 4),
    }),
    expectedStatuses: backpressureExpected ? [{ min: 200, max: 299 }, 503] : [{ min: 200, max: 299 }],
    backpressureExpected,
  };
}

/** A single-provider script: `ENDPOINT` (default `defaultEndpoint`) signed with `SECRET`. */
export function scriptSettings(env: Env, provider: ProviderName, defaultEndpoint: string): ScriptSettings {
  const endpoint = reader(env).text('ENDPOINT', defaultEndpoint);
  if (!ENDPOINT_NAME.test(endpoint)) throw new Error(`ENDPOINT is not an endpoint name: ${endpoint}`);
  const target: ScriptTarget = {
    endpoint,
    provider,
    url: `${baseUrl(env)}/webhooks/${endpoint}`,
    secret: env.SECRET ?? '',
    secretVariable: 'SECRET',
  };
  return settingsFor(env, [target]);
}

/** The mixed script: one run over several endpoints and providers, from `TARGETS`. */
export function mixedScriptSettings(env: Env): ScriptSettings {
  return settingsFor(env, parseTargets(reader(env).text('TARGETS', DEFAULT_TARGETS), env, baseUrl(env)));
}
