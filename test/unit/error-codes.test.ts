import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { classify } from '../../services/cli/support/exit.ts';
import { ERROR_CODES, exitCodeOf } from '../../services/core/error-codes.ts';
import { HookgateError } from '../../services/core/errors.ts';
import { EntityNotYetKnown, EventUnusable } from '../../services/core/handlers/types.ts';
import { STATUS_BY_CODE } from '../../services/gateway/rejections.ts';

// error-codes.ts is the one list of codes: the gateway's statuses and the commands' exit codes are
// read from it, and every code in it is one some module gives.

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

const code = readFileSync('services/core/error-codes.ts', 'utf8');
const elsewhere = sources('services')
  .filter((path) => !path.endsWith('error-codes.ts'))
  .map((path) => readFileSync(path, 'utf8'))
  .join('\n');

describe('error codes', () => {
  it('every listed code is given somewhere (no code outlives its last use)', () => {
    const unused = Object.keys(ERROR_CODES).filter((name) => !elsewhere.includes(`'${name}'`));
    expect(unused).toEqual([]);
    expect(code).toContain('export const ERROR_CODES');
  });

  it("the gateway's statuses are exactly the codes with an HTTP status", () => {
    const withStatus = Object.entries(ERROR_CODES).filter(([, meaning]) => 'http' in meaning);
    expect(Object.entries(STATUS_BY_CODE).sort()).toEqual(
      withStatus.map(([name, meaning]) => [name, (meaning as { http: number }).http]).sort(),
    );
    expect(STATUS_BY_CODE.signature_invalid).toBe(401);
    expect(STATUS_BY_CODE.overloaded).toBe(503);
  });

  it('a command ends with the exit code its error code has: 2 for usage, 1 otherwise', () => {
    expect(classify(new HookgateError('endpoint_unknown', 'no such endpoint')).exitCode).toBe(2);
    expect(classify(new HookgateError('nothing_changed', 'nothing to move')).exitCode).toBe(2);
    expect(classify(new HookgateError('database_unreachable', 'down')).exitCode).toBe(1);
    expect(classify(new HookgateError('send_test_timeout', 'slow')).exitCode).toBe(1);
    expect(exitCodeOf('not_a_code_anyone_gives')).toBe(1);
  });

  it("the handlers' error classes are HookgateErrors with listed codes", () => {
    const unknown = new EntityNotYetKnown('invoice in_1 is not known yet');
    expect(unknown).toBeInstanceOf(HookgateError);
    expect(unknown.code).toBe('entity_not_yet_known');
    expect(new EventUnusable('projection_unkeyed', 'no entity id')).toBeInstanceOf(HookgateError);
  });
});
