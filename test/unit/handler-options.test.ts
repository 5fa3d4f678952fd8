import { describe, expect, it } from 'vitest';
import { HookgateError } from '../../services/core/errors.ts';
import { createHandler } from '../../services/core/handlers/index.ts';
import { createLogger } from '../../services/core/logging.ts';

const deps = { endpoint: 'orders', logger: createLogger('silent'), configDir: process.cwd() };

async function refusal(spec: string, options: unknown): Promise<HookgateError> {
  const error = await createHandler(spec, options, deps).then(
    () => null,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(HookgateError);
  return error as HookgateError;
}

describe('handler options', () => {
  it('every handler names a bad option the same way: <endpoint>.options.<key>', async () => {
    const record = await refusal('record', { extra: 1 });
    expect([record.code, record.message]).toEqual([
      'handler_options_invalid',
      'orders.options.extra: unknown option',
    ]);
    const project = await refusal('project', { state: 'not a pointer' });
    expect(project.code).toBe('handler_options_invalid');
    expect(project.message).toMatch(/^orders\.options\.state: must be a JSON pointer/);
    const unknown = await refusal('project', { createon: ['x'] });
    expect(unknown.message).toBe('orders.options.createon: unknown option');
  });

  it('accepts valid options', async () => {
    await expect(createHandler('record', undefined, deps)).resolves.toMatchObject({ name: 'record' });
    await expect(
      createHandler('project', { createOn: ['thing.created'], state: '/data' }, deps),
    ).resolves.toMatchObject({ name: 'project' });
  });
});
