// Every code hookgate gives an error or a refusal, once, with what it means to whoever receives
// it: the HTTP status the gateway answers it with, and the exit code a command ends with (2: the
// command line or the configuration it names is wrong, or there was nothing to do; 1: something
// operational failed). The gateway's status table and the CLI's exit codes are read from here, and
// HookgateError takes only these codes, so a misspelt code is a type error, not a silent exit 1.

interface CodeMeaning {
  /** The command's exit code when this error ends it. */
  readonly exit: 1 | 2;
  /** The gateway's answer when it refuses a delivery with this code. */
  readonly http?: number;
  /**
   * The management API's answer (`/api/v1`, problem+json whose `type` is the code) when it differs
   * from `http` or the code has none; services/console/api/problems.ts reads it.
   */
  readonly api?: number;
}

const USAGE = { exit: 2 } as const;
const FAILURE = { exit: 1 } as const;
const refusal = <Status extends number>(http: Status) => ({ exit: 1, http }) as const;
/** Given by the management API only (a command that called it would end with exit 1). */
const apiAnswer = <Status extends number>(api: Status) => ({ exit: 1, api }) as const;

export const ERROR_CODES = {
  // The command line, the configuration and the environment: exit 2.
  usage_invalid: { exit: 2, api: 400 },
  endpoint_unknown: { exit: 2, http: 404, api: 404 },
  event_unknown: { exit: 2, api: 404 },
  config_invalid: USAGE,
  config_unreadable: USAGE,
  env_invalid: USAGE,
  database_url_invalid: USAGE,
  database_missing: USAGE,
  // A pooler lending sessions per transaction: retrying cannot change it (docs/kubernetes.md).
  database_pooling_unsupported: USAGE,
  // A PostgreSQL older than hookgate supports (services/core/db/server-checks.ts).
  database_version_unsupported: USAGE,
  credentials_missing: USAGE,
  credentials_invalid: USAGE,
  // verify's --sent file: the input the command was given is wrong.
  sent_file_invalid: USAGE,
  sent_file_unreadable: USAGE,
  sent_file_empty: USAGE,
  nothing_changed: USAGE,
  // A quarantined delivery another operator released or dropped first (the two lock its row).
  quarantine_settled: USAGE,
  // A replay or reconciliation window reaching past what deduplication still remembers
  // (dedupe.horizon, docs/storage.md): refused unless forced.
  dedupe_horizon_exceeded: USAGE,
  // send-test would send an event its handler applies: the endpoint's configuration says so.
  send_test_unrecognisable: USAGE,
  // A destination or delivery the command names does not exist (docs/destinations.md).
  destination_unknown: { exit: 2, api: 404 },
  delivery_unknown: { exit: 2, api: 404 },

  // Operational failures: exit 1.
  database_unreachable: { exit: 1, api: 503 },
  database_not_migrated: FAILURE,
  embedded_in_use: FAILURE,
  embedded_postgres_failed: FAILURE,
  migration_failed: FAILURE,
  inbox_conversion_blocked: FAILURE,
  gateway_unreachable: FAILURE,
  send_test_failed: FAILURE,
  send_test_timeout: FAILURE,
  replay_fetch_failed: FAILURE,
  replay_rate_limited: FAILURE,
  // Reconciliation: another run holds the endpoint's lease; a run stopped at its API budget.
  reconcile_busy: FAILURE,
  reconcile_budget_spent: FAILURE,
  job_insert_skipped: FAILURE,

  // A handler that cannot be built from its configuration (at start).
  handler_options_invalid: FAILURE,
  handler_module_invalid: FAILURE,
  handler_spec_invalid: FAILURE,

  // Handlers and the apply engine (recorded on the event as `code: message`).
  handler_invalid: FAILURE,
  handler_batch_invalid: FAILURE,
  handler_result_invalid: FAILURE,
  // A handler's route() named an event it was not given, or no destination it may route to.
  route_event_unknown: FAILURE,
  route_destination_unknown: FAILURE,
  stripe_refetch_failed: FAILURE,
  entity_not_yet_known: FAILURE,
  option_missing: FAILURE,
  projection_unkeyed: FAILURE,
  billing_payload_invalid: FAILURE,
  // A destination's connection went to an address relay.allowedDestinations refuses (recorded on
  // the attempt as `code: message`; the delivery is dead at once).
  destination_address_refused: FAILURE,
  // A delivery row names a destination the loaded configuration does not have: dead at once
  // (services/worker/destination-sweep.ts), redeliverable once the destination is back.
  destination_unconfigured: FAILURE,

  // Refusals of a delivery at the gateway, by the status they are answered with. 401 says "not
  // from who it claims"; 400 says "malformed".
  signature_missing: refusal(401),
  signature_invalid: refusal(401),
  timestamp_missing: refusal(401),
  timestamp_invalid: refusal(401),
  timestamp_out_of_tolerance: refusal(401),
  replay_token_invalid: refusal(401),
  event_id_missing: refusal(400),
  event_id_invalid: refusal(400),
  event_type_missing: refusal(400),
  event_type_invalid: refusal(400),
  version_invalid: refusal(400),
  body_not_json: refusal(400),
  body_unreadable: refusal(400),
  request_malformed: refusal(400),
  not_found: refusal(404),
  method_not_allowed: refusal(405),
  request_timeout: refusal(408),
  body_too_large: refusal(413),
  encoding_unsupported: refusal(415),
  payload_unstorable: refusal(422),
  replay_token_rate_limited: refusal(429),
  headers_too_large: refusal(431),
  database_unavailable: refusal(503),
  apply_failed: refusal(503),
  overloaded: refusal(503),
  // An endpoint's quarantine holds quarantine.maxHeldPerEndpoint rows: retryable, never dropped.
  quarantine_full: refusal(503),

  // The management API's own answers (docs/api.md).
  // No access token, or one the console does not know (401, with WWW-Authenticate: Bearer).
  auth_required: apiAnswer(401),
  // A viewer's token asked for an action (403): only operators act.
  role_forbidden: apiAnswer(403),
  // If-Match named a state the thing is no longer in (412): read it again.
  precondition_failed: apiAnswer(412),
  // An action without an Idempotency-Key (400), the same key on another request (422), or the
  // key's first request still acting (409).
  idempotency_key_missing: apiAnswer(400),
  idempotency_key_reused: apiAnswer(422),
  idempotency_key_in_progress: apiAnswer(409),
  // A request body that is not application/json (415).
  media_type_unsupported: apiAnswer(415),
  // A token past console.api.rateLimit requests a minute on this console (429, with Retry-After).
  rate_limited: apiAnswer(429),
  // Anything the API did not foresee (500); logged with its cause.
  internal_error: apiAnswer(500),
} as const satisfies Record<string, CodeMeaning>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** The codes the gateway answers a delivery with. */
export type RefusalCode = {
  [Code in ErrorCode]: (typeof ERROR_CODES)[Code] extends { readonly http: number } ? Code : never;
}[ErrorCode];

export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERROR_CODES, code);
}

/** The exit code of a command that ends with this error code (1 for a code hookgate does not know). */
export function exitCodeOf(code: string): 1 | 2 {
  return isErrorCode(code) ? ERROR_CODES[code].exit : 1;
}
