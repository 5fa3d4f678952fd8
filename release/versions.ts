// The one version hookgate has, and every place that repeats it: package.json is the source;
// `hookgate --version` reads it (services/core/version.ts); the chart's version and appVersion
// and the docs' image tags must say the same, the image tag defaults to appVersion, and
// CHANGELOG.md has the version's entry. A unit test (test/unit/versions.test.ts) and
// `make release` (release/release.ts) both run these checks.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

export const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$/;

/** Files whose text may name an image tag (`hookgate:0.1.0`): each must name this version. */
function documents(root: string): string[] {
  const docs = readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => join('docs', name));
  return ['README.md', 'SECURITY.md', 'charts/hookgate/README.md', 'charts/hookgate/values.yaml', ...docs].filter(
    (path) => existsSync(join(root, path)),
  );
}

/** The version package.json gives. */
export function packageVersion(root: string): string {
  return (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
}

/** A CHANGELOG.md heading for a released version: `## [0.1.0] - 2026-12-04`. */
export function changelogEntry(root: string, version: string): { date: string } | null {
  const text = readFileSync(join(root, 'CHANGELOG.md'), 'utf8');
  const heading = new RegExp(`^## \\[${version.replaceAll('.', '\\.')}\\] - (\\d{4}-\\d{2}-\\d{2})$`, 'm').exec(text);
  if (!heading) return null;
  const date = heading[1]!;
  return Number.isNaN(Date.parse(`${date}T00:00:00Z`)) ? null : { date };
}

/** Every place that disagrees with `version` (package.json's unless given), as sentences. */
export function versionProblems(root: string, version: string = packageVersion(root)): string[] {
  const problems: string[] = [];
  if (!SEMVER.test(version)) problems.push(`${version} is not a version of the form MAJOR.MINOR.PATCH`);
  const own = packageVersion(root);
  if (own !== version) problems.push(`package.json says ${own}, not ${version}`);
  const chart = parse(readFileSync(join(root, 'charts/hookgate/Chart.yaml'), 'utf8')) as {
    version?: unknown;
    appVersion?: unknown;
  };
  if (chart.version !== version)
    problems.push(`charts/hookgate/Chart.yaml's version is ${String(chart.version)}, not ${version}`);
  if (chart.appVersion !== version)
    problems.push(`charts/hookgate/Chart.yaml's appVersion is ${String(chart.appVersion)}, not ${version}`);
  const values = parse(readFileSync(join(root, 'charts/hookgate/values.yaml'), 'utf8')) as {
    image?: { tag?: unknown };
  };
  if (values.image?.tag !== '')
    problems.push(
      `charts/hookgate/values.yaml's image.tag is ${JSON.stringify(values.image?.tag)}: it must be "" (the chart's appVersion)`,
    );
  for (const path of documents(root)) {
    for (const match of readFileSync(join(root, path), 'utf8').matchAll(/\bhookgate:(\d+\.\d+\.\d+)\b/g)) {
      if (match[1] !== version) problems.push(`${path} names the image hookgate:${match[1]}, not ${version}`);
    }
  }
  if (!changelogEntry(root, version))
    problems.push(`CHANGELOG.md has no "## [${version}] - YYYY-MM-DD" entry`);
  return problems;
}
