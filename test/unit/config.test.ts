import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, parseConfig } from '../../services/core/config/load.ts';
import { HookgateError } from '../../services/core/errors.ts';

const endpoint = { provider: 'stripe', secrets: ['whsec_x'] };

function problem(document: unknown, env: Record<string, string> = {}): string {
  try {
    parseConfig(document, env);
  } catch (error) {
    expect(error).toBeInstanceOf(HookgateError);
    expect((error as HookgateError).code).toBe('config_invalid');
    return (error as HookgateError).message;
  }
  throw new Error('expected the configuration to be refused');
}

describe('configuration', () => {
  it('fills documented defaults', () => {
    const config = parseConfig({ endpoints: { pay: endpoint } }, {});
    expect(config.server.bodyLimit).toBe(1024 * 1024);
    expect(config.server.maxBufferedBytes).toBe(64 * 1024 * 1024);
    expect(config.relay).toEqual({ pollingInterval: 500 });
    expect(config.claim).toEqual({
      maxBatch: 200,
      maxWait: 2,
      concurrency: 4,
      maxQueued: 5_000,
      maxBatchBytes: 4 * 1024 * 1024,
      wakeupInterval: 20,
    });
    expect(config.endpoints.pay).toMatchObject({ tolerance: 300_000, mode: 'async', handler: 'record' });
  });

  it('names an unknown key by its path', () => {
    expect(problem({ endpoints: { pay: { ...endpoint, secret: 'x' } } })).toContain(
      'endpoints.pay.secret: unknown key',
    );
    expect(problem({ endpoints: { pay: endpoint }, sever: {} })).toContain('sever: unknown key');
  });

  it('names missing secrets', () => {
    expect(problem({ endpoints: { pay: { provider: 'stripe' } } })).toContain('endpoints.pay.secrets');
    expect(problem({ endpoints: { pay: { provider: 'stripe', secrets: [] } } })).toContain(
      'endpoints.pay.secrets: needs at least one secret',
    );
  });

  it('bounds durations that would switch a safeguard off', () => {
    expect(problem({ endpoints: { pay: endpoint }, database: { statementTimeout: '0ms' } })).toContain(
      'database.statementTimeout',
    );
    expect(problem({ endpoints: { pay: endpoint }, server: { requestTimeout: '0s' } })).toContain(
      'server.requestTimeout',
    );
    expect(problem({ endpoints: { pay: { ...endpoint, tolerance: '100h' } } })).toContain(
      'endpoints.pay.tolerance',
    );
  });

  it('says a bound in the units the user wrote, never in milliseconds or bytes', () => {
    const at = (extra: Record<string, unknown>) => problem({ endpoints: { pay: { ...endpoint, ...extra } } });
    expect(at({ tolerance: '48h' })).toContain('endpoints.pay.tolerance: 48h is longer than the 24h maximum');
    expect(at({ tolerance: '2d' })).toContain('endpoints.pay.tolerance: 2d is longer than the 1d maximum');
    expect(at({ tolerance: '500ms' })).toContain(
      'endpoints.pay.tolerance: 500ms is shorter than the 1s minimum',
    );
    const config = (section: string, values: Record<string, unknown>) =>
      problem({ endpoints: { pay: endpoint }, [section]: values });
    expect(config('relay', { pollingInterval: '10ms' })).toContain(
      'relay.pollingInterval: 10ms is shorter than the 50ms minimum',
    );
    expect(config('worker', { retryDelayMax: '3d' })).toContain(
      'worker.retryDelayMax: 3d is longer than the 1d maximum',
    );
    expect(config('claim', { maxBatchBytes: '32kb' })).toContain(
      'claim.maxBatchBytes: 32kb is smaller than the 64kb minimum',
    );
    expect(config('server', { maxBufferedBytes: '512kib' })).toContain(
      'server.maxBufferedBytes: 512kib is smaller than the 1mib minimum',
    );
    expect(config('database', { poolSize: 500 })).toContain(
      'database.poolSize: 500 is more than the 200 maximum',
    );
    for (const message of [at({ tolerance: '48h' }), config('server', { maxBufferedBytes: '512kib' })]) {
      expect(message).not.toMatch(/Too (big|small)|expected number|86400000|1048576/);
    }
  });

  it('names a bad duration', () => {
    expect(problem({ endpoints: { pay: { ...endpoint, tolerance: '5 minutes' } } })).toMatch(
      /endpoints\.pay\.tolerance: "5 minutes" is not a duration/,
    );
  });

  it('names an unknown provider and lists the known ones', () => {
    expect(problem({ endpoints: { pay: { ...endpoint, provider: 'paypal' } } })).toMatch(
      /endpoints\.pay\.provider: unknown provider "paypal"; use one of standard-webhooks, .*stripe/,
    );
  });

  it('interpolates ${ENV} in secrets and names an unset variable', () => {
    const config = parseConfig(
      { endpoints: { pay: { provider: 'stripe', secrets: ['${PAY_SECRET}', 'old'] } } },
      {
        PAY_SECRET: 'whsec_from_env',
      },
    );
    expect(config.endpoints.pay?.secrets).toEqual(['whsec_from_env', 'old']);
    expect(problem({ endpoints: { pay: { provider: 'stripe', secrets: ['${PAY_SECRET}'] } } })).toContain(
      'endpoints.pay.secrets[0]: environment variable PAY_SECRET is not set',
    );
  });

  it('requires hmac options exactly for the hmac provider', () => {
    expect(problem({ endpoints: { h: { provider: 'hmac', secrets: ['s'] } } })).toContain(
      'endpoints.h.hmac: is required when provider is hmac',
    );
    expect(
      problem({ endpoints: { h: { provider: 'hmac', secrets: ['s'], hmac: { header: 'X-Sig' } } } }),
    ).toContain('endpoints.h.hmac.eventIdHeader');
    expect(problem({ endpoints: { s: { ...endpoint, hmac: { header: 'X-Sig' } } } })).toContain(
      'endpoints.s.hmac: is only allowed when provider is hmac',
    );
  });

  it('keeps claim concurrency below the pool size', () => {
    expect(
      problem({ endpoints: { pay: endpoint }, claim: { concurrency: 10 }, database: { poolSize: 10 } }),
    ).toContain('claim.concurrency: must be below database.poolSize (10)');
  });

  it('refuses endpoint names that cannot be URL path segments and queue names', () => {
    expect(problem({ endpoints: { 'Pay Ments': endpoint } })).toContain('endpoint names use a-z');
  });

  it('reads YAML files and reports YAML errors and duplicate keys with the file name', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookgate-config-'));
    const good = join(dir, 'good.yaml');
    writeFileSync(good, 'endpoints:\n  pay:\n    provider: stripe\n    secrets: ["${S}"]\n');
    expect(loadConfig(good, { S: 'whsec_1' }).endpoints.pay?.secrets).toEqual(['whsec_1']);
    const duplicated = join(dir, 'dup.yaml');
    writeFileSync(
      duplicated,
      'endpoints:\n  pay: {provider: stripe, secrets: [a]}\n  pay: {provider: github, secrets: [b]}\n',
    );
    expect(() => loadConfig(duplicated, {})).toThrow(/dup\.yaml is not valid YAML/);
    expect(() => loadConfig(join(dir, 'missing.yaml'), {})).toThrow(/Cannot read the configuration file/);
  });
});
