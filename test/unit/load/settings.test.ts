import { describe, expect, it } from 'vitest';
import { classifyAnswer } from '../../../load/lib/answer.ts';
import { DEFAULT_MIX, planArrival, planStep } from '../../../load/lib/mix.ts';
import { mixedScriptSettings, SCENARIOS, scenarioFor, scriptSettings } from '../../../load/lib/settings.ts';

describe('k6 script settings', () => {
  it('defines exactly the chosen scenario, with an arrival-rate executor and a VU pool', () => {
    for (const name of SCENARIOS) {
      const settings = scriptSettings({ SCENARIO: name }, 'stripe', 'stripe');
      expect(Object.keys(settings.options.scenarios ?? {})).toEqual([name]);
      const scenario = settings.options.scenarios![name]!;
      expect(['constant-arrival-rate', 'ramping-arrival-rate']).toContain(scenario.executor);
      expect(scenario).toHaveProperty('preAllocatedVUs');
      expect(scenario).toHaveProperty('timeUnit', '1s');
    }
    expect(scriptSettings({}, 'stripe', 'stripe').scenario).toBe('smoke');
  });

  it('reads rates, durations and bounds from the environment', () => {
    expect(scenarioFor('steady', { RATE: '250', DURATION: '15m' })).toEqual({
      executor: 'constant-arrival-rate',
      rate: 250,
      timeUnit: '1s',
      duration: '15m',
      preAllocatedVUs: 25,
      maxVUs: 250,
    });
    expect(
      scenarioFor('ramp', { RATE: '100', RAMP_TO: '3000', DURATION: '20m', MAX_VUS: '800' }),
    ).toMatchObject({
      executor: 'ramping-arrival-rate',
      startRate: 50,
      stages: [{ target: 3000, duration: '20m' }],
      maxVUs: 800,
    });
    const spike = scenarioFor('spike', { RATE: '50', SPIKE_FOR: '2m' });
    expect(spike).toMatchObject({ startRate: 50 });
    expect(spike.executor === 'ramping-arrival-rate' && spike.stages.map((s) => s.target)).toEqual([
      50, 500, 500, 50, 50,
    ]);
    expect(scenarioFor('soak', {})).toMatchObject({ rate: 100, duration: '2h' });
  });

  it('fails the run on any non-2xx, on ack p99 over the bound and on any dropped iteration; the ramp aborts at saturation', () => {
    const steady = scriptSettings({ SCENARIO: 'steady', ACK_P99_MS: '250' }, 'stripe', 'stripe').options
      .thresholds;
    expect(steady).toEqual({
      hookgate_non_2xx: ['count==0'],
      http_req_failed: ['rate==0'],
      hookgate_ack_ms: ['p(99)<250'],
      dropped_iterations: ['count==0'],
    });
    const ramp = scriptSettings({ SCENARIO: 'ramp' }, 'stripe', 'stripe').options.thresholds;
    expect(ramp?.hookgate_ack_ms).toEqual([
      { threshold: 'p(99)<500', abortOnFail: true, delayAbortEval: '30s' },
    ]);
  });

  it('builds the URL and the mix, and refuses bad values naming the variable', () => {
    const settings = scriptSettings(
      { BASE_URL: 'https://hooks.example.com/', ENDPOINT: 'things', SECRET: 's', LATER_DUPLICATES: '0.2' },
      'standard-webhooks',
      'x',
    );
    expect(settings.targets).toEqual([
      {
        endpoint: 'things',
        provider: 'standard-webhooks',
        url: 'https://hooks.example.com/webhooks/things',
        secret: 's',
        secretVariable: 'SECRET',
      },
    ]);
    expect(settings.mix.laterDuplicates).toBe(0.2);
    expect(() => scriptSettings({ SCENARIO: 'burst' }, 'stripe', 'x')).toThrow(/SCENARIO must be one of/);
    expect(() => scriptSettings({ SCENARIO: 'steady', RATE: 'fast' }, 'stripe', 'x')).toThrow(/RATE must be/);
    expect(() => scriptSettings({ SCENARIO: 'steady', RATE: '0' }, 'stripe', 'x')).toThrow(
      /RATE must be above 0/,
    );
    expect(() => scriptSettings({ SCENARIO: 'soak', DURATION: '2 hours' }, 'stripe', 'x')).toThrow(
      /DURATION must be/,
    );
    expect(() => scriptSettings({ ENDPOINT: 'Bad/Name' }, 'stripe', 'x')).toThrow(/ENDPOINT/);
    expect(() => scriptSettings({ BASE_URL: 'hooks.example.com' }, 'stripe', 'x')).toThrow(/BASE_URL/);
    expect(() => scriptSettings({ CONCURRENT_DUPLICATES: '0.95' }, 'stripe', 'x')).toThrow(
      /duplicate shares/,
    );
  });

  it('a spike takes 503 overloaded as back-pressure (not failed in k6, counted apart); other scenarios fail on it', () => {
    const spike = scriptSettings({ SCENARIO: 'spike' }, 'stripe', 'stripe');
    expect(spike.backpressureExpected).toBe(true);
    expect(spike.expectedStatuses).toEqual([{ min: 200, max: 299 }, 503]);
    // Other non-2xx answers still fail the spike through hookgate_non_2xx.
    expect(spike.options.thresholds?.hookgate_non_2xx).toEqual(['count==0']);
    const steady = scriptSettings({ SCENARIO: 'steady' }, 'stripe', 'stripe');
    expect(steady.backpressureExpected).toBe(false);
    expect(steady.expectedStatuses).toEqual([{ min: 200, max: 299 }]);
  });

  it('the mixed script: TARGETS as endpoint,provider,SECRET_VARIABLE entries, secrets from the named variables', () => {
    const env = {
      BASE_URL: 'http://gw:8080',
      STRIPE_SECRET: 'whsec_s',
      THINGS_SECRET: 'whsec_t',
      GITHUB_SECRET: 'g',
    };
    const defaults = mixedScriptSettings(env);
    expect(defaults.targets.map((t) => [t.endpoint, t.provider, t.url, t.secret])).toEqual([
      ['stripe', 'stripe', 'http://gw:8080/webhooks/stripe', 'whsec_s'],
      ['things', 'standard-webhooks', 'http://gw:8080/webhooks/things', 'whsec_t'],
      ['github', 'github', 'http://gw:8080/webhooks/github', 'g'],
    ]);
    expect(defaults.options.thresholds?.dropped_iterations).toEqual(['count==0']);
    const two = mixedScriptSettings({ TARGETS: ' pay,stripe,PAY_KEY  gh,github,GH_KEY ', PAY_KEY: 'p' });
    expect(two.targets.map((t) => [t.endpoint, t.secret, t.secretVariable])).toEqual([
      ['pay', 'p', 'PAY_KEY'],
      ['gh', '', 'GH_KEY'],
    ]);
    expect(() => mixedScriptSettings({ TARGETS: 'pay,paypal,KEY' })).toThrow(
      'TARGETS entry pay,paypal,KEY: provider must be one of standard-webhooks, stripe, github',
    );
    expect(() => mixedScriptSettings({ TARGETS: 'pay,stripe' })).toThrow(
      'TARGETS entry pay,stripe is not endpoint,provider,SECRET_VARIABLE',
    );
    expect(() => mixedScriptSettings({ TARGETS: '  ' })).toThrow(/at least one/);
  });
});

describe('answers in a load run', () => {
  it('2xx is acknowledged; 503 overloaded is back-pressure only where expected; any other 503 fails', () => {
    const overloaded = JSON.stringify({ error: 'overloaded', message: 'Too many deliveries…' });
    const down = JSON.stringify({ error: 'database_unavailable', message: 'retry' });
    expect(classifyAnswer(200, '{"status":"accepted"}', true)).toBe('acked');
    expect(classifyAnswer(503, overloaded, true)).toBe('backpressure');
    expect(classifyAnswer(503, overloaded, false)).toBe('failed');
    expect(classifyAnswer(503, down, true)).toBe('failed');
    expect(classifyAnswer(503, 'not json', true)).toBe('failed');
    expect(classifyAnswer(503, null, true)).toBe('failed');
    expect(classifyAnswer(401, overloaded, true)).toBe('failed');
  });
});

describe('one run over several targets', () => {
  it('goes round-robin, each target its own sequence of the mix (duplicates included)', () => {
    const run = { id: 'mixed', startedAt: 1_764_460_800 };
    const targets = [
      { endpoint: 'pay', provider: 'stripe' as const },
      { endpoint: 'things', provider: 'standard-webhooks' as const },
      { endpoint: 'gh', provider: 'github' as const },
    ];
    const arrivals = Array.from({ length: 3000 }, (_, i) => planArrival(targets, run, i, DEFAULT_MIX));
    expect(arrivals.slice(0, 4).map((a) => a.target.endpoint)).toEqual(['pay', 'things', 'gh', 'pay']);
    for (const [n, target] of targets.entries()) {
      const own = arrivals.filter((a) => a.target === target);
      expect(own).toHaveLength(1000);
      // The same steps a single-target run of that provider sends.
      expect(own.map((a) => a.step)).toEqual(
        Array.from({ length: 1000 }, (_, i) => planStep(target.provider, run, i, DEFAULT_MIX)),
      );
      expect(own.some((a) => a.step.kind === 'later-duplicate')).toBe(true);
      expect(arrivals[n]!.target).toBe(target);
    }
  });
});
