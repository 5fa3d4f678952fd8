import { ERROR_CODES, type RefusalCode } from '../core/error-codes.ts';

/** What the gateway answers a refusal with: every code error-codes.ts gives an HTTP status. */
export type GatewayErrorCode = RefusalCode;

export const STATUS_BY_CODE: Readonly<Record<GatewayErrorCode, number>> = Object.fromEntries(
  Object.entries(ERROR_CODES).flatMap(([code, meaning]) =>
    'http' in meaning ? [[code, meaning.http] as const] : [],
  ),
) as Record<GatewayErrorCode, number>;

export function isGatewayErrorCode(code: string): code is GatewayErrorCode {
  return Object.hasOwn(STATUS_BY_CODE, code);
}

/**
 * Every value the `outcome` label of hookgate_deliveries_total can take. docs/observability.md
 * lists them; a test keeps the two equal.
 */
export const DELIVERY_OUTCOMES: readonly string[] = [
  'accepted',
  'duplicate',
  'replied',
  'quarantined',
  'client_aborted',
  ...Object.keys(STATUS_BY_CODE),
];
