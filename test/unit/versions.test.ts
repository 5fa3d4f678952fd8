// hookgate's version is written once, in package.json: `hookgate --version`, the chart's version
// and appVersion, the image tag's default, the docs' image tags and CHANGELOG.md agree with it
// (release/versions.ts, which `make release` runs too).
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageVersion, versionProblems } from '../../release/versions.ts';
import { HOOKGATE_VERSION } from '../../services/core/version.ts';
import { runCliInProcess } from '../support/cli.ts';
import { ROOT } from '../support/process.ts';

describe('one version', () => {
  it('package.json, the chart, the image tag, the docs and CHANGELOG.md agree', () => {
    expect(packageVersion(ROOT)).toMatch(/^\d+\.\d+\.\d+$/);
    expect(versionProblems(ROOT)).toEqual([]);
  });

  it("hookgate --version prints package.json's", async () => {
    expect(HOOKGATE_VERSION).toBe(packageVersion(ROOT));
    const run = await runCliInProcess(['--version']);
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe(packageVersion(ROOT));
  });

  it('names each place that says another version', () => {
    const copy = mkdtempSync(join(tmpdir(), 'hookgate-versions-'));
    try {
      for (const path of [
        'package.json',
        'CHANGELOG.md',
        'README.md',
        'SECURITY.md',
        'docs',
        'charts/hookgate',
      ])
        cpSync(join(ROOT, path), join(copy, path), { recursive: true });
      const version = packageVersion(ROOT);
      const chart = join(copy, 'charts/hookgate/Chart.yaml');
      writeFileSync(
        chart,
        readFileSync(chart, 'utf8').replace(`appVersion: "${version}"`, 'appVersion: "9.9.9"'),
      );
      const values = join(copy, 'charts/hookgate/values.yaml');
      writeFileSync(values, readFileSync(values, 'utf8').replace('  tag: ""', '  tag: "latest"'));
      writeFileSync(join(copy, 'docs/extra.md'), 'docker build -t registry.example.com/hookgate:0.0.9 .\n');
      expect(versionProblems(copy)).toEqual([
        `charts/hookgate/Chart.yaml's appVersion is 9.9.9, not ${version}`,
        `charts/hookgate/values.yaml's image.tag is "latest": it must be "" (the chart's appVersion)`,
        `docs/extra.md names the image hookgate:0.0.9, not ${version}`,
      ]);
      expect(versionProblems(copy, '7.0.0')).toEqual(
        expect.arrayContaining([
          `package.json says ${version}, not 7.0.0`,
          'CHANGELOG.md has no "## [7.0.0] - YYYY-MM-DD" entry',
        ]),
      );
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });
});
