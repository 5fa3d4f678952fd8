import { describe, expect, it } from 'vitest';
import { helm, scenarioFile } from './tools.ts';

// Values that would install something broken fail `helm template` and `helm lint` with a
// message naming the problem. The default scenario renders (the control), so each failure below
// comes from the one value the case changes.
const base = [scenarioFile('default-values.yaml')];

// Schema errors fail `helm lint` too. Render-time checks (`fail` in templates) fail `helm template`
// and `helm install`; `helm lint` runs a `fail` that only logs, so the chart's checks go through
// hookgate.refuse, which makes `helm lint --strict` fail with the same sentence. The one check
// made inside a document rather than beside it (the image, `inline`) is only logged by lint.
const cases: {
  name: string;
  set: string[];
  valuesFiles?: string[];
  message: RegExp;
  schema: boolean;
  inline?: true;
  /** What lint says, where `message` names the template as `helm template` does. */
  lintMessage?: RegExp;
}[] = [
  {
    name: 'an unknown top-level key (a typo of gateway)',
    set: ['gatway.replicaCount=3'],
    message: /additional properties 'gatway' not allowed/,
    schema: true,
  },
  {
    name: 'an unknown key inside gateway',
    set: ['gateway.ingres.enabled=true'],
    message: /at '\/gateway': additional properties 'ingres' not allowed/,
    schema: true,
  },
  {
    name: 'an unknown key inside worker.keda',
    set: ['worker.keda.target=5'],
    message: /at '\/worker\/keda': additional properties 'target' not allowed/,
    schema: true,
  },
  {
    name: 'a wrong type (replicaCount as text)',
    set: ['gateway.replicaCount=three'],
    message: /at '\/gateway\/replicaCount': got string, want integer/,
    schema: true,
  },
  {
    name: 'a wrong type (a boolean toggle as text)',
    set: ['networkPolicy.enabled=yes'],
    message: /at '\/networkPolicy\/enabled': got string, want boolean/,
    schema: true,
  },
  {
    name: 'both autoscalers on the worker',
    set: ['worker.keda.enabled=true', 'worker.autoscaling.enabled=true'],
    message: /worker.keda.enabled and worker.autoscaling.enabled are both true: choose one autoscaler/,
    schema: false,
  },
  {
    name: 'no secret source',
    set: [
      'image.repository=registry.example.com/hookgate',
      'config.endpoints.stripe.provider=stripe',
      'config.endpoints.stripe.secrets[0]=${STRIPE_WEBHOOK_SECRET}',
    ],
    valuesFiles: [],
    message: /No secret source: set secrets.existingSecret .* or set secrets.databaseUrl/,
    schema: false,
  },
  {
    name: 'no image repository (no public image is published)',
    set: ['image.repository='],
    message:
      /image.repository is empty: no public hookgate image is published\. Build one from the repository's Dockerfile \(`make image`/,
    schema: false,
    inline: true,
  },
  {
    name: 'existingSecret together with chart-created secret values',
    set: ['secrets.existingSecret=mine'],
    message:
      /secrets.existingSecret is set together with secrets.databaseUrl or secrets.values: use one source/,
    schema: false,
  },
  {
    name: 'a literal signing secret in the ConfigMap',
    set: ['config.endpoints.stripe.secrets[0]=whsec_literal'],
    message: /at '\/config\/endpoints\/stripe\/secrets\/0': 'whsec_literal' does not match pattern/,
    schema: true,
  },
  {
    name: 'a ${NAME} the chart-created Secret does not hold',
    set: ['config.endpoints.stripe.secrets[0]=${OTHER_SECRET}'],
    message: /config.endpoints.stripe.secrets: \$\{OTHER_SECRET\} has no key in secrets.values/,
    schema: false,
  },
  {
    name: "a gateway grace period shorter than preStop + drain, reported at the gateway's template",
    set: ['gateway.terminationGracePeriodSeconds=20'],
    message:
      /^Error: execution error at \(hookgate\/templates\/gateway-deployment\.yaml:\d+:\d+\): gateway.terminationGracePeriodSeconds \(20\) must exceed preStopSleepSeconds \+ the longest shutdownTimeout \+ 10s \(30\)/,
    lintMessage:
      /templates\/gateway-deployment\.yaml: .*"gateway.terminationGracePeriodSeconds \(20\) must exceed preStopSleepSeconds \+ the longest shutdownTimeout \+ 10s \(30\): the kubelet would kill pods mid-drain\."/,
    schema: false,
  },
  {
    name: "a worker grace period shorter than its drain, reported at the worker's template",
    set: ['worker.terminationGracePeriodSeconds=20'],
    message:
      /^Error: execution error at \(hookgate\/templates\/worker-deployment\.yaml:\d+:\d+\): worker.terminationGracePeriodSeconds \(20\) must exceed the longest shutdownTimeout \+ 10s \(25\)/,
    lintMessage:
      /templates\/worker-deployment\.yaml: .*"worker.terminationGracePeriodSeconds \(20\) must exceed the longest shutdownTimeout \+ 10s \(25\): the kubelet would kill pods mid-drain\."/,
    schema: false,
  },
  {
    name: 'several endpoints and no tests.endpoint (helm test would guess)',
    set: [
      'config.endpoints.github.provider=github',
      'config.endpoints.github.secrets[0]=${STRIPE_WEBHOOK_SECRET}',
    ],
    message: /tests.endpoint is empty and config.endpoints has 2 endpoints \(github, stripe\): name the one/,
    schema: false,
  },
  {
    name: 'an unknown key in a hookgate config section',
    set: ['config.database.poolsize=20'],
    message: /at '\/config\/database': additional properties 'poolsize' not allowed/,
    schema: true,
  },
  {
    name: "a config value outside hookgate's bounds",
    set: ['config.database.poolSize=500'],
    message: /at '\/config\/database\/poolSize': maximum: got 500, want 200/,
    schema: true,
  },
  {
    name: "a duration past hookgate's bound (tolerance 48h), the bound said in words",
    set: ['config.endpoints.stripe.tolerance=48h'],
    message:
      /at '\/config\/endpoints\/stripe\/tolerance': '48h' does not match pattern '\^\(\?:\$ a duration from 1s to 1d \)\?/,
    schema: true,
  },
  {
    name: 'a size below its bound (server.maxBufferedBytes 512kib)',
    set: ['config.server.maxBufferedBytes=512kib'],
    message:
      /at '\/config\/server\/maxBufferedBytes': '512kib' does not match pattern '\^\(\?:\$ a size from 1mib to 16384mib \)\?/,
    schema: true,
  },
  {
    name: 'a pool no larger than the claim concurrency (poolSize 2, concurrency 4 by default)',
    set: ['config.database.poolSize=2'],
    message: /at '\/config\/database\/poolSize': minimum: got 2, want 5/,
    schema: true,
  },
  {
    name: 'a claim concurrency the default pool cannot hold (concurrency 12, poolSize 10 by default)',
    set: ['config.claim.concurrency=12'],
    message: /at '\/config\/database\/poolSize': minimum: got 10, want 13/,
    schema: true,
  },
  {
    name: 'an hmac endpoint without its hmac block',
    set: ['config.endpoints.stripe.provider=hmac'],
    message: /at '\/config\/endpoints\/stripe': missing property 'hmac'/,
    schema: true,
  },
  {
    name: 'a forward handler (a destination now)',
    set: ['config.endpoints.stripe.handler=forward'],
    message: /at '\/config\/endpoints\/stripe\/handler'/,
    schema: true,
  },
  {
    name: 'a misspelt handler option',
    set: [
      'config.endpoints.stripe.handler=billing',
      'config.endpoints.stripe.options.notifyUrl=https://x.example',
    ],
    message: /at '\/config\/endpoints\/stripe\/options': additional properties 'notifyUrl' not allowed/,
    schema: true,
  },
  {
    name: "a literal secret in a destination's Authorization header",
    set: [
      'config.endpoints.stripe.destinations.ledger.url=https://ledger.example/in',
      'config.endpoints.stripe.destinations.ledger.headers.Authorization=Bearer literal',
    ],
    message:
      /at '\/config\/endpoints\/stripe\/destinations\/ledger\/headers\/Authorization': 'Bearer literal' does not match pattern/,
    schema: true,
  },
  {
    name: 'a literal destination signing secret',
    set: [
      'config.endpoints.stripe.destinations.ledger.url=https://ledger.example/in',
      'config.endpoints.stripe.destinations.ledger.signing.secrets[0]=whsec_bGl0ZXJhbA==',
    ],
    message:
      /at '\/config\/endpoints\/stripe\/destinations\/ledger\/signing\/secrets\/0': 'whsec_bGl0ZXJhbA==' does not match pattern/,
    schema: true,
  },
  {
    name: 'no endpoint configured',
    set: ['config.endpoints=null'],
    message: /at '\/config': missing property 'endpoints'/,
    schema: true,
  },
  {
    name: 'the chart’s own endpoints (none) with an image and a Secret',
    set: ['image.repository=registry.example.com/hookgate', 'secrets.existingSecret=hookgate-secrets'],
    valuesFiles: [],
    message: /config\.endpoints is empty: the chart ships no endpoint\. Configure at least one/,
    schema: false,
  },
];

describe('bad values fail with a readable message', () => {
  it('the control: the default scenario renders', async () => {
    const result = await helm('template', { valuesFiles: base });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });

  it.each(cases)('$name: helm template fails, naming it', async (bad) => {
    const template = await helm('template', { valuesFiles: bad.valuesFiles ?? base, set: bad.set });
    expect(template.code).not.toBe(0);
    expect(template.stderr).toMatch(bad.message);
  });

  it.each(cases.filter((bad) => !bad.inline))('$name: helm lint --strict fails, naming it', async (bad) => {
    const lint = await helm('lint', { valuesFiles: bad.valuesFiles ?? base, set: bad.set });
    expect(lint.code).not.toBe(0);
    expect(lint.stdout + lint.stderr).toMatch(bad.lintMessage ?? bad.message);
  });
});
