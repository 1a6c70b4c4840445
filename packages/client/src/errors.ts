/**
 * Errors by code. Every failed call throws a FixloopError carrying the API's stable `code` (match on it,
 * not on the message), the HTTP status, `details` and the `requestId` support asks for. Subclasses group
 * the codes into families so `instanceof` reads like the spec's error table.
 */

/** Error codes the API documents today; the union stays open because new codes ship additively. */
export type ErrorCode =
  | 'invalid_body'
  | 'invalid_id'
  | 'no_op'
  | 'missing_authorization'
  | 'invalid_authorization'
  | 'unknown_app'
  | 'invalid_user_token'
  | 'origin_not_allowed'
  | 'public_disabled'
  | 'not_found'
  | 'app_not_found'
  | 'invalid_transition'
  | 'concurrent_update'
  | 'invalid_target'
  | 'idempotency_key_reused'
  | 'not_yet_sanitized'
  | 'payload_too_large'
  | 'rate_limited'
  | 'internal_error'
  | 'connection_error'
  | 'timeout'
  | 'stream_error'
  | 'invalid_response'
  | (string & {})

export interface FixloopErrorInit {
  status: number
  code: ErrorCode
  message: string
  details?: unknown
  requestId?: string | null
  headers?: Headers
}

export class FixloopError extends Error {
  /** HTTP status; 0 when no response arrived (connection error, timeout). */
  readonly status: number
  readonly code: ErrorCode
  readonly details: unknown
  /** The X-Request-Id of the failed response (else `details.requestId`), for support. */
  readonly requestId: string | null
  readonly headers: Headers

  constructor(init: FixloopErrorInit) {
    super(init.message)
    this.name = 'FixloopError'
    this.status = init.status
    this.code = init.code
    this.details = init.details
    this.requestId = init.requestId ?? null
    this.headers = init.headers ?? new Headers()
  }
}

/** 400: the request was not valid (`details.issues` says where). */
export class InvalidRequestError extends FixloopError {
  override name = 'InvalidRequestError'
}
/** 401: missing or wrong credentials. */
export class AuthenticationError extends FixloopError {
  override name = 'AuthenticationError'
}
/** 403: the credentials are fine but not allowed here (origin, public submission disabled). */
export class PermissionDeniedError extends FixloopError {
  override name = 'PermissionDeniedError'
}
/** 404: nothing with that id in your Org (cross-Org ids look exactly like missing ones). */
export class NotFoundError extends FixloopError {
  override name = 'NotFoundError'
}
/** 409: the move is not allowed now; `from`/`to` or `leadFeedbackId` say why. */
export class ConflictError extends FixloopError {
  override name = 'ConflictError'
  get from(): string | undefined {
    return detail(this.details, 'from')
  }
  get to(): string | undefined {
    return detail(this.details, 'to')
  }
  /** For invalid_target: act on this lead instead. */
  get leadFeedbackId(): string | undefined {
    return detail(this.details, 'leadFeedbackId')
  }
}
/** 413: body over 8 MB or attachment over 15 MB. */
export class PayloadTooLargeError extends FixloopError {
  override name = 'PayloadTooLargeError'
}
/** 429: the rate limit was hit; wait at least `retryAfterSeconds`. */
export class RateLimitError extends FixloopError {
  override name = 'RateLimitError'
  get retryAfterSeconds(): number | null {
    return retryAfterMs(this.headers) === null ? null : Math.ceil(retryAfterMs(this.headers)! / 1000)
  }
}
/** 5xx: the server failed; quote `requestId` to support. */
export class InternalServerError extends FixloopError {
  override name = 'InternalServerError'
}
/** No response: DNS, refused or dropped connection. */
export class ConnectionError extends FixloopError {
  override name = 'ConnectionError'
}
/** No response within `timeoutMs`. */
export class TimeoutError extends FixloopError {
  override name = 'TimeoutError'
}

/**
 * The event stream broke its framing: more than `MAX_EVENT_CHARS` of one event (or of one line) without
 * the newline that ends it, as from a proxy or server that never sends one (`status` 0, code
 * `stream_error`). Not retried: reconnecting would read the same thing again.
 */
export class StreamError extends FixloopError {
  override name = 'StreamError'
}

function detail(details: unknown, key: string): string | undefined {
  const v = details && typeof details === 'object' ? (details as Record<string, unknown>)[key] : undefined
  return typeof v === 'string' ? v : undefined
}

/** Retry-After in ms (delta-seconds or an HTTP date), or null when absent or unreadable. */
export function retryAfterMs(headers: Headers, now = Date.now()): number | null {
  const value = headers.get('retry-after')
  if (!value) return null
  const seconds = Number(value)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const date = Date.parse(value)
  return Number.isNaN(date) ? null : Math.max(0, date - now)
}

/** Builds the error of the right family from a non-2xx response and its parsed envelope. */
export function errorFromResponse(res: Response, body: unknown): FixloopError {
  const envelope = body && typeof body === 'object' ? (body as { error?: Record<string, unknown> }).error : undefined
  const init: FixloopErrorInit = {
    status: res.status,
    code: typeof envelope?.code === 'string' ? envelope.code : `http_${res.status}`,
    message: typeof envelope?.message === 'string' ? envelope.message : `HTTP ${res.status}`,
    details: envelope?.details,
    // internal_error also carries it in details (CONTRACT "Error details"): still there when a proxy drops the header.
    requestId: res.headers.get('x-request-id') ?? detail(envelope?.details, 'requestId') ?? null,
    headers: res.headers,
  }
  const s = res.status
  const Family =
    s === 400 ? InvalidRequestError
    : s === 401 ? AuthenticationError
    : s === 403 ? PermissionDeniedError
    : s === 404 ? NotFoundError
    : s === 409 ? ConflictError
    : s === 413 ? PayloadTooLargeError
    : s === 429 ? RateLimitError
    : s >= 500 ? InternalServerError
    : FixloopError
  return new Family(init)
}
