import type { RejectionCode } from '../core/providers/types.ts';

export type GatewayErrorCode =
  | RejectionCode
  | 'endpoint_unknown'
  | 'replay_token_invalid'
  | 'replay_token_rate_limited'
  | 'body_too_large'
  | 'body_unreadable'
  | 'payload_unstorable'
  | 'database_unavailable'
  | 'apply_failed'
  | 'job_busy'
  | 'overloaded'
  | 'event_id_invalid'
  | 'event_type_invalid'
  | 'encoding_unsupported'
  | 'request_timeout'
  | 'headers_too_large'
  | 'request_malformed'
  | 'method_not_allowed'
  | 'not_found';

/** HTTP status per refusal. 401 says "not from who it claims"; 400 says "malformed". */
export const STATUS_BY_CODE: Readonly<Record<GatewayErrorCode, number>> = {
  signature_missing: 401,
  signature_invalid: 401,
  timestamp_missing: 401,
  timestamp_invalid: 401,
  timestamp_out_of_tolerance: 401,
  replay_token_invalid: 401,
  event_id_missing: 400,
  event_id_invalid: 400,
  event_type_missing: 400,
  event_type_invalid: 400,
  version_invalid: 400,
  body_not_json: 400,
  body_unreadable: 400,
  request_malformed: 400,
  endpoint_unknown: 404,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  body_too_large: 413,
  encoding_unsupported: 415,
  replay_token_rate_limited: 429,
  headers_too_large: 431,
  payload_unstorable: 422,
  database_unavailable: 503,
  apply_failed: 503,
  job_busy: 503,
  overloaded: 503,
};

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
  'client_aborted',
  ...Object.keys(STATUS_BY_CODE),
];
