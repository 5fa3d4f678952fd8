import type { DriverTarget } from '../../load/driver/driver.ts';

/**
 * The three endpoints the load mix (load/lib/mix.ts) targets, as the hookgate config that serves
 * them and as the driver's targets: one definition for the load smoke run and the chaos run.
 * The secrets are test-only and listed in process.ts, so no process output may contain them.
 */
const SECRETS = {
  stripe: 'whsec_test_stripe_secret_for_hookgate',
  standardWebhooks: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  github: 'github-load-mix-secret',
} as const;

export const LOAD_MIX_ENDPOINTS = ['billing', 'things', 'gh'] as const;

export const LOAD_MIX_CONFIG = `endpoints:
  billing: { provider: stripe, secrets: ["${SECRETS.stripe}"], handler: billing }
  things:
    provider: standard-webhooks
    secrets: ["${SECRETS.standardWebhooks}"]
    handler: project
    extract: { entityType: /data/object, entityId: /data/id, version: /data/version }
  gh: { provider: github, secrets: ["${SECRETS.github}"], handler: record }
`;

export const LOAD_MIX_TARGETS: readonly DriverTarget[] = [
  { endpoint: 'billing', provider: 'stripe', secret: SECRETS.stripe },
  { endpoint: 'things', provider: 'standard-webhooks', secret: SECRETS.standardWebhooks },
  { endpoint: 'gh', provider: 'github', secret: SECRETS.github },
];
