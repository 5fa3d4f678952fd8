import { describe, expect, it } from 'vitest';
import { CHART, run, scenarioFile, tool } from './tools.ts';

// NOTES.txt, as `helm install` prints it (client-side dry run: no cluster, so `lookup` finds no
// Secret and the warning must list what the Secret needs).
async function notes(scenario: string): Promise<string> {
  const result = await run(
    tool('helm'),
    ['install', 'hg', CHART, '-n', 'hookgate', '--dry-run=client', '-f', scenarioFile(scenario)],
    { KUBECONFIG: '/dev/null' },
  );
  expect(result.code, result.stderr).toBe(0);
  return result.stdout.slice(result.stdout.indexOf('NOTES:'));
}

describe('NOTES.txt', () => {
  it('gives the webhook URL of every endpoint and warns about a Secret it cannot find, listing its keys', async () => {
    const text = await notes('existing-secret-values.yaml');
    expect(text).toContain('github (github): http://hg-hookgate-gateway.hookgate.svc:80/webhooks/github');
    expect(text).toContain('stripe (stripe): http://hg-hookgate-gateway.hookgate.svc:80/webhooks/stripe');
    expect(text).toMatch(/WARNING: Secret "hookgate-secrets" was not found/);
    for (const key of [
      'database-url',
      'GITHUB_WEBHOOK_SECRET',
      'STRIPE_WEBHOOK_SECRET',
      'STRIPE_WEBHOOK_SECRET_PREVIOUS',
    ]) {
      expect(text).toContain(`  - ${key}\n`);
    }
    expect(text).toContain('helm test hg -n hookgate');
  });

  it('uses the Ingress host and scheme when an Ingress is enabled', async () => {
    const text = await notes('ingress-values.yaml');
    expect(text).toContain('stripe (stripe): https://webhooks.example.com/webhooks/stripe');
    expect(text).not.toContain('port-forward');
  });
});
