import { describe, expect, it } from 'vitest';
import { SCENARIOS, scenarioFor, scriptSettings } from '../../../load/lib/settings.ts';

describe('k6 script settings', () => {
  it('defines exactly the chosen scenario, with an arrival-rate executor and a VU pool', () => {
    for (const name of SCENARIOS) {
      const settings = scriptSettings({ SCENARIO: name }, 'stripe');
      expect(Object.keys(settings.options.scenarios ?? {})).toEqual([name]);
      const scenario = settings.options.scenarios![name]!;
      expect(['constant-arrival-rate', 'ramping-arrival-rate']).toContain(scenario.executor);
      expect(scenario).toHaveProperty('preAllocatedVUs');
      expect(scenario).toHaveProperty('timeUnit', '1s');
    }
    expect(scriptSettings({}, 'stripe').scenario).toBe('smoke');
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

  it('fails the run on any non-2xx and on ack p99 over the bound; the ramp aborts at saturation', () => {
    const steady = scriptSettings({ SCENARIO: 'steady', ACK_P99_MS: '250' }, 'stripe').options.thresholds;
    expect(steady).toEqual({
      hookgate_non_2xx: ['count==0'],
      http_req_failed: ['rate==0'],
      hookgate_ack_ms: ['p(99)<250'],
    });
    const ramp = scriptSettings({ SCENARIO: 'ramp' }, 'stripe').options.thresholds;
    expect(ramp?.hookgate_ack_ms).toEqual([
      { threshold: 'p(99)<500', abortOnFail: true, delayAbortEval: '30s' },
    ]);
  });

  it('builds the URL and the mix, and refuses bad values naming the variable', () => {
    const settings = scriptSettings(
      { BASE_URL: 'https://hooks.example.com/', ENDPOINT: 'things', SECRET: 's', LATER_DUPLICATES: '0.2' },
      'x',
    );
    expect(settings.url).toBe('https://hooks.example.com/webhooks/things');
    expect(settings.mix.laterDuplicates).toBe(0.2);
    expect(() => scriptSettings({ SCENARIO: 'burst' }, 'x')).toThrow(/SCENARIO must be one of/);
    expect(() => scriptSettings({ SCENARIO: 'steady', RATE: 'fast' }, 'x')).toThrow(/RATE must be/);
    expect(() => scriptSettings({ SCENARIO: 'steady', RATE: '0' }, 'x')).toThrow(/RATE must be above 0/);
    expect(() => scriptSettings({ SCENARIO: 'soak', DURATION: '2 hours' }, 'x')).toThrow(/DURATION must be/);
    expect(() => scriptSettings({ ENDPOINT: 'Bad/Name' }, 'x')).toThrow(/ENDPOINT/);
    expect(() => scriptSettings({ BASE_URL: 'hooks.example.com' }, 'x')).toThrow(/BASE_URL/);
    expect(() => scriptSettings({ CONCURRENT_DUPLICATES: '0.95' }, 'x')).toThrow(/duplicate shares/);
  });
});
