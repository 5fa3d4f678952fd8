import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PROVIDER_NAMES } from '../../../services/core/providers/index.ts';
import type { EvidenceKind } from '../../../services/core/providers/preset.ts';
import { PRESETS } from '../../../services/core/providers/presets.ts';

// docs/providers.md must say what the code does: one table row per provider, with the evidence
// kind the code records (presets.ts) or its test holds (the hand-written seven), and the counts.
const HAND_WRITTEN: Readonly<Record<string, EvidenceKind>> = {
  'standard-webhooks': 'sdk',
  svix: 'sdk',
  stripe: 'sdk',
  github: 'sdk',
  shopify: 'docs',
  slack: 'sdk',
  paddle: 'sdk',
};

const doc = readFileSync(new URL('../../../docs/providers.md', import.meta.url), 'utf8');
const rows = new Map(
  [...doc.matchAll(/^\| `([a-z-]+)` \|(.*)\| (sdk|example|docs)\b[^|]*\|$/gm)].map((m) => [m[1], m[3]]),
);

describe('docs/providers.md', () => {
  const expected: Record<string, EvidenceKind> = {
    ...HAND_WRITTEN,
    ...Object.fromEntries(Object.entries(PRESETS).map(([name, preset]) => [name, preset.evidence.kind])),
  };

  it('has one row per provider, with its evidence kind', () => {
    expect(Object.fromEntries(rows)).toEqual(expected);
    expect(new Set([...rows.keys(), 'hmac', 'scheme'])).toEqual(new Set(PROVIDER_NAMES));
  });

  it('states the counts by evidence kind that the rows add up to', () => {
    const count = (kind: EvidenceKind) => Object.values(expected).filter((k) => k === kind).length;
    expect(doc.replace(/\s+/g, ' ')).toContain(
      `**${count('sdk')} sdk, ${count('example')} example, ${count('docs')} docs**`,
    );
    const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
    expect(readme).toContain(
      `exists (${count('sdk')}), else a computation from its documentation (${count('docs')})`,
    );
  });
});
