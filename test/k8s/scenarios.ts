// What `make test-k8s` does with each chart scenario (charts/hookgate/ci/*-values.yaml). Every
// scenario is rendered and accepted by the API server (chart-validation.test.ts); the ones below
// marked `installed` are also installed for real, their pods Ready and `helm test` passing
// (install.test.ts), or exercised by the test named. test/unit/k8s-scenarios.test.ts keeps this
// list equal to the ci/ folder, so a new scenario cannot be left out.
export const SCENARIOS = {
  'default-values.yaml':
    'installed: install.test.ts, then upgraded, rolled back and its pods deleted under load (upgrade.test.ts)',
  'existing-secret-values.yaml': 'installed: install.test.ts',
  'console-values.yaml': 'installed: install.test.ts',
  'hpa-values.yaml': 'server-validated; the gateway HPA is installed and scaled by autoscaling.test.ts',
  'keda-values.yaml':
    'server-validated; installed with KEDA running, its ScaledObject scaling the workers up and down on the backlog (keda.test.ts)',
  'ingress-values.yaml': 'server-validated (no ingress controller runs on the test cluster)',
  'monitoring-values.yaml': 'server-validated (no prometheus-operator runs on the test cluster)',
  'network-policy-values.yaml': 'server-validated (the bridge CNI does not enforce NetworkPolicy)',
} as const satisfies Record<string, string>;

export type Scenario = keyof typeof SCENARIOS;
