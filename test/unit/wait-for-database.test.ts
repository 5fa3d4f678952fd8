import { describe, expect, it } from 'vitest';
import { untilReachable } from '../../services/core/db/wait-for-database.ts';
import { createLogger } from '../../services/core/logging.ts';
import { isUnreachable } from '../../services/core/unreachable.ts';

const coded = (code: string, message = code) => Object.assign(new Error(message), { code });

describe('waiting for the database at start', () => {
  it('waits out a database that is down, starting or full, not one that refuses for good', () => {
    expect(isUnreachable(coded('ECONNREFUSED'))).toBe(true);
    expect(isUnreachable(coded('ENOTFOUND'))).toBe(true);
    // A DNS server not answering yet (CoreDNS restarting) is as temporary as a refused connection.
    expect(isUnreachable(coded('EAI_AGAIN'))).toBe(true);
    expect(isUnreachable(new AggregateError([coded('ECONNREFUSED')], 'connect failed'))).toBe(true);
    expect(isUnreachable(coded('57P03', 'the database system is starting up'))).toBe(true);
    expect(isUnreachable(coded('08006'))).toBe(true);
    expect(isUnreachable(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isUnreachable(coded('28P01', 'password authentication failed'))).toBe(false);
    expect(isUnreachable(coded('3D000', 'database "x" does not exist'))).toBe(false);
    expect(isUnreachable(new Error('something else'))).toBe(false);
  });

  it('retries with a growing pause until it succeeds, and gives up at the deadline', async () => {
    let clock = 0;
    const pauses: number[] = [];
    const options = {
      timeoutMs: 3_000,
      logger: createLogger('silent'),
      where: '127.0.0.1:5432',
      now: () => clock,
      sleep: async (ms: number) => {
        pauses.push(ms);
        clock += ms;
      },
    };
    let calls = 0;
    const value = await untilReachable(async () => {
      calls += 1;
      if (calls < 4) throw coded('ECONNREFUSED');
      return 'up';
    }, options);
    expect(value).toBe('up');
    expect(pauses).toEqual([250, 500, 1_000]);

    clock = 0;
    pauses.length = 0;
    await expect(untilReachable(async () => Promise.reject(coded('ECONNREFUSED')), options)).rejects.toThrow(
      'ECONNREFUSED',
    );
    // 250 + 500 + 1 000 + 1 250 (what was left of the 3 s).
    expect(pauses).toEqual([250, 500, 1_000, 1_250]);
    // A refusal waiting cannot fix fails at once.
    pauses.length = 0;
    await expect(untilReachable(async () => Promise.reject(coded('28P01')), options)).rejects.toThrow(
      '28P01',
    );
    expect(pauses).toEqual([]);
  });
});
