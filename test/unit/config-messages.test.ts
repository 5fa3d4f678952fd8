import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import { HookgateError } from '../../services/core/errors.ts';

function problems(document: unknown): string[] {
  try {
    parseConfig(document, {});
  } catch (error) {
    expect(error).toBeInstanceOf(HookgateError);
    return (error as HookgateError).message
      .split('\n')
      .slice(1)
      .map((line) => line.trim());
  }
  throw new Error('expected the configuration to be refused');
}

// A configuration's problems in the words of the YAML a user wrote, never the validator's
// ("Invalid input: expected array, received undefined"), with a guess for a misspelt handler.
describe('configuration messages', () => {
  it('say what a missing or mistyped key should hold, and what a misspelt handler meant', () => {
    const lines = problems({
      endpoints: {
        a: { provider: 'stripe', handler: 'recrod' },
        b: { provider: 'stripe', secrets: 'whsec_one' },
        c: { provider: 'stripe', secrets: ['whsec_x'], handler: 'billnig' },
      },
    });
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^endpoints\.a\.secrets: is required: the endpoint's signing secrets/),
        expect.stringMatching(/^endpoints\.a\.handler: unknown handler "recrod" \(did you mean "record"\?\)/),
        'endpoints.b.secrets: must be a list, not text ("whsec_one")',
        expect.stringMatching(
          /^endpoints\.c\.handler: unknown handler "billnig" \(did you mean "billing"\?\)/,
        ),
      ]),
    );
    expect(lines.join('\n')).not.toMatch(/Invalid input|expected array|received undefined/);
  });
});
