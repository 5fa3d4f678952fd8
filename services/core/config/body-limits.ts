import type { ProviderName } from '../providers/index.ts';

const MIB = 1024 * 1024;

/**
 * The largest body each provider documents sending, where that is above server.bodyLimit's
 * 1 MiB default. A delivery refused with 413 is retried by providers that retry, and lost for
 * GitHub and GitLab, which do not (docs/runbooks.md): the default must take whatever the provider
 * may send. Only documented figures are here (docs/gateway.md "Body limits" lists the rest), and
 * "MB" is read as MiB, the larger of its two readings:
 * - GitHub: "Payloads are capped at 25 MB" (About webhook events and payloads,
 *   https://docs.github.com/en/webhooks/webhook-events-and-payloads).
 * - GitLab: "The maximum webhook payload size is 25 MB" (Instance limits, Webhook payload size,
 *   https://docs.gitlab.com/administration/instance_limits/#webhook-payload-size).
 * Bitbucket Cloud ("Webhook payload is limited to 256 KB", Troubleshoot webhooks,
 * https://confluence.atlassian.com/bbkb/troubleshoot-webhooks-1167729092.html) and Zendesk
 * ("less than 256 KB", Creating webhooks) document less than the default: no entry.
 */
export const PROVIDER_BODY_LIMITS: Readonly<Partial<Record<ProviderName, number>>> = {
  github: 25 * MIB,
  gitlab: 25 * MIB,
};

/** A jsonb value holds less than 256 MiB: a larger body could never be stored, whatever the limit. */
export const MAX_ENDPOINT_BODY_LIMIT = 256 * MIB;

export interface BodyLimitSource {
  readonly provider: ProviderName;
  readonly bodyLimit?: number | undefined;
}

/** An endpoint's own bodyLimit, else its provider's documented maximum, else server.bodyLimit. */
export function endpointBodyLimit(endpoint: BodyLimitSource, serverBodyLimit: number): number {
  return endpoint.bodyLimit ?? PROVIDER_BODY_LIMITS[endpoint.provider] ?? serverBodyLimit;
}

/** Where an endpoint's limit came from, for messages: `endpoints.gh.bodyLimit` or the default's reason. */
export function bodyLimitOrigin(endpoint: BodyLimitSource): 'endpoint' | 'provider' | 'server' {
  if (endpoint.bodyLimit !== undefined) return 'endpoint';
  return PROVIDER_BODY_LIMITS[endpoint.provider] !== undefined ? 'provider' : 'server';
}

/** `25 MiB`, `512 KiB`, `1000 bytes`: sizes in the units the config speaks. */
export function formatBytes(bytes: number): string {
  if (bytes >= MIB && bytes % (MIB / 4) === 0) return `${bytes / MIB} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}
