import { describe, expect, it } from 'vitest';
import { configValuesSchema, readSchema } from './values-schema.ts';

describe('values.schema.json', () => {
  it("its config section is generated from hookgate's config schema (regenerate: node test/chart/values-schema.ts --write)", () => {
    const properties = readSchema().properties as Record<string, unknown>;
    expect(properties.config).toEqual(configValuesSchema());
  });

  it('rejects unknown top-level keys and is self-contained (no remote references)', () => {
    const schema = readSchema();
    expect(schema.additionalProperties).toBe(false);
    expect(JSON.stringify(schema)).not.toMatch(/"\$ref"/);
  });
});
