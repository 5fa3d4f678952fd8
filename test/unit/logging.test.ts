import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { HookgateError } from '../../services/core/errors.ts';
import { serializeError } from '../../services/core/logging.ts';
import { OutageLog } from '../../services/core/outage-log.ts';

/** A pino logger with hookgate's level formatter and error serializer, writing to an array. */
function capture(): { logger: pino.Logger; lines: () => Record<string, unknown>[] } {
  const out: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      out.push(String(chunk));
      done();
    },
  });
  const logger = pino(
    {
      level: 'debug',
      formatters: { level: (label) => ({ level: label }) },
      serializers: { err: serializeError },
    },
    sink,
  );
  return {
    logger,
    lines: () =>
      out
        .join('')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

const refused = () =>
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED', errno: -111 });

describe('log lines', () => {
  it('createLogger writes the level as a string', async () => {
    // The real logger, on a pipe to a child process: its own formatter, not the test's.
    const { execFileSync } = await import('node:child_process');
    const script =
      "import { createLogger } from './services/core/logging.ts'; const l = createLogger('info'); l.info({ endpoint: 'a' }, 'hello'); l.warn('careful');";
    const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: new URL('../..', import.meta.url).pathname,
      encoding: 'utf8',
    });
    const lines = output
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines.map((line) => line.level)).toEqual(['info', 'warn']);
    expect(lines[0]).toMatchObject({ msg: 'hello', endpoint: 'a', service: 'hookgate' });
  });

  it('an expected condition (an error with a code) is logged without a stack; a bug keeps it', () => {
    expect(serializeError(refused())).toEqual({
      type: 'Error',
      code: 'ECONNREFUSED',
      message: 'connect ECONNREFUSED 127.0.0.1:5432',
    });
    expect(serializeError(new HookgateError('option_missing', 'set it'))).toEqual({
      type: 'HookgateError',
      code: 'option_missing',
      message: 'set it',
    });
    const aggregate = Object.assign(new AggregateError([refused(), refused()], ''), { code: 'ECONNREFUSED' });
    expect(serializeError(aggregate)).toMatchObject({
      code: 'ECONNREFUSED',
      message: expect.stringMatching(/ECONNREFUSED/),
    });
    const cause = new HookgateError('option_missing', 'set it');
    const bug = serializeError(new TypeError('x is undefined', { cause })) as Record<string, unknown>;
    expect(bug.stack).toMatch(/TypeError: x is undefined\n\s+at /);
    expect(bug.cause).toEqual({ type: 'HookgateError', code: 'option_missing', message: 'set it' });
    // A dropped connection (pg gives it no code) is expected too; and no error's other properties
    // (pg attaches its client, with connection details) are ever written.
    const dropped = Object.assign(new Error('Connection terminated unexpectedly'), {
      client: { secretKey: 1 },
    });
    expect(serializeError(dropped)).toEqual({ type: 'Error', message: 'Connection terminated unexpectedly' });
    const withClient = Object.assign(new RangeError('bad'), { client: { password: 'p' } });
    expect(serializeError(withClient)).not.toHaveProperty('client');
  });
});

describe('a database outage in the log', () => {
  it('is one line when it starts, a summary per interval while it lasts, one line when it ends', async () => {
    const { logger, lines } = capture();
    let now = 1_000_000;
    const outage = new OutageLog(logger, { where: 'db:5432/hookgate', summaryEveryMs: 50, now: () => now });
    // Ten loops failing ten times each, as a worker does in ten seconds of outage.
    for (let round = 0; round < 10; round += 1) {
      for (let loop = 0; loop < 10; loop += 1) expect(outage.failed(`loop ${loop}`, refused())).toBe(true);
      now += 1_000;
    }
    await new Promise((resolve) => setTimeout(resolve, 130));
    // Not about reaching the database: the caller logs it itself.
    expect(outage.failed('loop 0', new Error('syntax error at or near "SELEC"'))).toBe(false);
    outage.recovered();
    outage.recovered();
    const written = lines();
    expect(written[0]).toMatchObject({
      level: 'error',
      msg: expect.stringMatching(/^PostgreSQL at db:5432\/hookgate is unreachable/),
      source: 'loop 0',
      err: { code: 'ECONNREFUSED' },
    });
    expect(written[0]!.err).not.toHaveProperty('stack');
    const summaries = written.filter(
      (line) => line.msg === 'PostgreSQL at db:5432/hookgate is still unreachable',
    );
    expect(summaries.length).toBeGreaterThanOrEqual(1);
    expect(summaries.length).toBeLessThanOrEqual(3);
    expect(summaries[0]).toMatchObject({ level: 'warn', down_for_ms: 10_000 });
    expect(written.at(-1)).toMatchObject({
      level: 'info',
      msg: 'PostgreSQL at db:5432/hookgate is reachable again',
      down_for_ms: 10_000,
      failures: Object.fromEntries(Array.from({ length: 10 }, (_, loop) => [`loop ${loop}`, 10])),
    });
    expect(written).toHaveLength(2 + summaries.length);
  });

  it('counts a connection dropped without a code, also as pg-boss reports it (a plain object, not an Error)', () => {
    const { logger, lines } = capture();
    const outage = new OutageLog(logger, { where: 'db:5432/hookgate' });
    const dropped = new Error('Connection terminated unexpectedly');
    // pg-boss's worker loops emit { ...error, message, stack, queue, worker }.
    const fromQueue = {
      message: `${dropped.message} (Queue: q, Worker: w)`,
      stack: dropped.stack,
      queue: 'q',
    };
    expect(outage.failed('loop 0', dropped)).toBe(true);
    expect(outage.failed('queue', fromQueue)).toBe(true);
    expect(outage.failed('queue', { message: 'relation "x" does not exist' })).toBe(false);
    outage.recovered();
    expect(lines().map((line) => line.msg)).toEqual([
      expect.stringMatching(/ is unreachable; retrying/),
      'PostgreSQL at db:5432/hookgate is reachable again',
    ]);
  });

  it('counts every failure to reach the database, so a loop can tell a step that reached it', () => {
    const { logger } = capture();
    const outage = new OutageLog(logger, { where: 'db:5432/hookgate' });
    const before = outage.failuresSeen;
    outage.failed('worker apply', refused());
    outage.failed('worker apply', { message: 'relation "x" does not exist' });
    expect(outage.failuresSeen - before).toBe(1);
  });

  it('after an interrupt that stops the database too, counts failures and writes nothing', () => {
    const { logger, lines } = capture();
    const outage = new OutageLog(logger, { where: 'db:5432/hookgate' });
    outage.quiet();
    expect(outage.failed('worker apply', refused())).toBe(true);
    expect(outage.failed('queue', { message: 'relation "x" does not exist' })).toBe(false);
    expect(lines()).toEqual([]);
  });
});

describe("a handler's start-up warning", () => {
  it("names its endpoint once: the worker's child logger already carries it", async () => {
    const { createHandler } = await import('../../services/core/handlers/index.ts');
    const raw: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        raw.push(String(chunk));
        done();
      },
    });
    const logger = pino({ level: 'info' }, sink);
    await createHandler(
      'billing',
      {},
      { endpoint: 'bill', logger: logger.child({ endpoint: 'bill' }), configDir: '.' },
    );
    const line = raw
      .join('')
      .split('\n')
      .find((text) => text.includes('option_missing'));
    expect(line).toBeDefined();
    // Counted in the text written: a parsed object would hide a repeated key.
    expect(line?.split('"endpoint":').length).toBe(2);
  });
});
