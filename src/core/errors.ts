/**
 * The single error type of the API. Routes and services throw it; only the error plugin turns it into
 * the spec's envelope `{ error: { code, message, details? } }`. The HTTP status comes from one table
 * keyed by code, so a code can never be sent with the wrong status.
 *
 * The CLI throws the same type: a 4xx code is the operator's mistake (exit 2, message on stderr), a 5xx
 * code is fixloop's (exit 1). So a service behaves the same behind a route, the CLI or the dashboard.
 */
export const ERROR_STATUS = {
  invalid_body: 400,
  invalid_id: 400,
  invalid_argument: 400,
  no_op: 400,
  url_not_allowed: 400,
  missing_authorization: 401,
  not_signed_in: 401,
  invalid_credentials: 401,
  invalid_authorization: 401,
  unknown_app: 401,
  invalid_user_token: 401,
  origin_not_allowed: 403,
  csrf_failed: 403,
  forbidden: 403,
  invalid_setup_token: 403,
  public_disabled: 403,
  invalid_signature: 403,
  url_expired: 403,
  proof_of_work_required: 403,
  proof_of_work_invalid: 403,
  not_found: 404,
  app_not_found: 404,
  org_not_found: 404,
  key_not_found: 404,
  route_not_found: 404,
  invalid_transition: 409,
  concurrent_update: 409,
  invalid_target: 409,
  idempotency_key_reused: 409,
  already_uploaded: 409,
  not_a_duplicate: 409,
  not_yet_sanitized: 409,
  email_taken: 409,
  slug_taken: 409,
  webhook_disabled: 409,
  tracker_not_connected: 409,
  payload_too_large: 413,
  url_too_long: 414,
  headers_too_large: 431,
  rate_limited: 429,
  internal_error: 500,
  not_ready: 503,
} as const

export type ErrorCode = keyof typeof ERROR_STATUS

const DEFAULT_MESSAGES: Record<ErrorCode, string> = {
  invalid_body: 'The request body is not valid.',
  invalid_id: 'The id is not a 24-character hex id.',
  invalid_argument: 'An argument is not valid.',
  no_op: 'The patch is empty: nothing to change.',
  url_not_allowed: 'The URL is not an allowed webhook target (http(s) only; private, loopback, link-local and metadata addresses are refused).',
  missing_authorization: 'The Authorization header is missing.',
  not_signed_in: 'Sign in to the dashboard first (the session is missing, expired or revoked).',
  invalid_credentials: 'The email, password or one-time code is not correct.',
  invalid_authorization: 'The Authorization header is malformed or the key is not valid.',
  unknown_app: 'No App matches this public key.',
  invalid_user_token: 'The user token failed verification.',
  origin_not_allowed: 'The Origin is not allowed for this App.',
  csrf_failed: 'The X-CSRF-Token header is missing or wrong, or the request came from another site.',
  forbidden: 'Your role in this Org does not allow this action.',
  invalid_setup_token: 'The setup link is unknown, already used or expired. Restart the server for a new one, or use `fixloop admin create`.',
  public_disabled: 'Public submission is disabled for this App: a user token is required.',
  invalid_signature: 'The upload URL signature is not valid for this object.',
  url_expired: 'The upload URL has expired; request a new one.',
  proof_of_work_required: 'This App asks public submissions for a proof of work: solve a challenge from GET /v1/widget/challenge and send it in X-Fixloop-Proof-Of-Work (a solution is good for one request).',
  proof_of_work_invalid: 'The proof of work in X-Fixloop-Proof-Of-Work is not valid (see details.reason); solve a new challenge from GET /v1/widget/challenge.',
  not_found: 'Not found.',
  app_not_found: 'No such App in this Org.',
  org_not_found: 'No such Org.',
  key_not_found: 'No such API key in this Org.',
  route_not_found: 'No such route.',
  invalid_transition: 'The current status does not allow this move.',
  concurrent_update: 'Another writer changed this item. Safe to retry.',
  invalid_target: 'This item is a duplicate of another; act on the lead instead.',
  idempotency_key_reused: 'This Idempotency-Key was already used with a different request body.',
  not_a_duplicate: 'This report is not a duplicate of another: nothing to unmerge.',
  not_yet_sanitized: 'This report is still being sanitized; retry in a moment (see Retry-After).',
  email_taken: 'An admin with this email already exists.',
  slug_taken: 'This slug is already used by another App of the Org.',
  webhook_disabled: 'This webhook endpoint is disabled; create a new one or re-enable it first.',
  tracker_not_connected: 'The App has no issue tracker connected (PUT /v1/apps/{id}/tracker).',
  already_uploaded: 'An object was already uploaded under this key; request a new upload URL.',
  payload_too_large: 'The payload is too large.',
  url_too_long: 'The request URL is too long.',
  headers_too_large: 'The request headers are too large.',
  rate_limited: 'Rate limit exceeded. Retry after the number of seconds in Retry-After.',
  internal_error: 'Internal error.',
  not_ready: 'The service is not ready.',
}

export class ApiError extends Error {
  readonly status: number
  /** Extra response headers the error needs (e.g. Retry-After for rate_limited). */
  headers?: Record<string, string>
  /** Set by `serviceUnavailable`: a 503 the client retries after this many seconds. */
  retryAfterSeconds?: number

  constructor(
    readonly code: ErrorCode,
    readonly details?: unknown,
    message?: string,
  ) {
    super(message ?? DEFAULT_MESSAGES[code])
    this.status = ERROR_STATUS[code]
  }

  withHeaders(headers: Record<string, string>): this {
    this.headers = headers
    return this
  }

  toEnvelope(): { error: { code: string; message: string; details?: unknown } } {
    const error: { code: string; message: string; details?: unknown } = { code: this.code, message: this.message }
    if (this.details !== undefined) error.details = this.details
    return { error }
  }
}

/**
 * A request the server cannot take now but will shortly (request bodies arriving beyond its budget, the
 * disk nearly full for uploads): 503 with Retry-After. Spec part 7 gives a 5xx no code but
 * `internal_error`, so that is its code, with the request id beside `reason` in details (foundation.ts),
 * and `message` saying what to do; it is not logged as a failure.
 */
export function serviceUnavailable(reason: string, message: string, retryAfterSeconds: number): ApiError {
  const e = new ApiError('internal_error', { reason }, message)
  e.retryAfterSeconds = retryAfterSeconds
  return e
}

/**
 * 400 invalid_body about the query string, said so: the code is the spec's for any input that fails its
 * schema, but its default message names the request body, which sent callers looking in the wrong place.
 * Here, beside ApiError, so modules that check a query value outside a route (the audit export's `since`,
 * read by the CLI too) need not load the HTTP layer.
 */
export function invalidQuery(issues: { path: string; message: string }[]): ApiError {
  return new ApiError('invalid_body', { issues }, 'A query parameter is not valid (see details.issues).')
}
