/**
 * Cross-cutting request handling, applied to every route:
 * - X-Request-Id on every response (a client's own id is echoed when it is a sane token);
 * - the 8 MB body limit, checked from Content-Length before any byte is read and counted while reading
 *   (uploads to the embedded store have their own 15 MB limit and stream past this one); the bytes of
 *   bodies held at once, per client address and in all (body-budget.ts);
 * - one strict JSON reader for every route (strict-json.ts): depth, size and Content-Type before parsing,
 *   NUL after (core/nul.ts); NUL in the URL where the route reads it (url-nul.ts);
 * - URL and header sizes, answered with the envelope (Bun's own limit is raised above ours, see build);
 * - the one error handler that renders the spec's envelope; unknown errors become 500 internal_error
 *   with details.requestId, and their stack is logged, never sent;
 * - one log line per request: method, route, status, time, request id, the client's address (the same
 *   proxy rule as the rate limits, http/client-address.ts) and the Org/App it acted for, never a credential;
 * - request count and latency per route for GET /metrics, recorded in the after-handle and error hooks
 *   (inline in the request's own task: an after-response hook would cost an extra task per request).
 */
import { Elysia, ValidationError } from 'elysia'
import { Kind } from '@sinclair/typebox'
import { ApiError, invalidQuery } from '../core/errors'
import { LIMITS } from '../core/limits'
import { CHARS_KIND, charsIssue } from '../core/schema'
import { newId } from '../core/ids'
import type { Logger } from '../core/logger'
import { parseStrictJson } from './strict-json'
import { repeatedQueryParameter } from './repeated-query'
import { bodyOnBodylessRoute } from './bodyless'
import { nulInUrl } from './url-nul'
import { hasUsableHost, pathOfUrl } from './url-path'
import type { RequestMetrics } from '../modules/metrics/request-metrics'
import { clientAddress } from './client-address'
import { addressKey } from '../core/address-key'
import { lendTicket, type BodyBudget } from './body-budget'
import { callerOf } from './request-caller'
import { storageUnavailable } from '../db/unavailable'
import { failureLog } from '../db/outage-log'

/** What Elysia puts on the JSON a handler returns: the error envelope carries exactly the same. */
export const JSON_CONTENT_TYPE = 'application/json;charset=utf-8'

const startedAt = new WeakMap<Request, number>()
/** The client address of each request, for its log line (kept only when request lines are logged). */
const clientOf = new WeakMap<Request, string>()
const CLIENT_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/

/** Embedded-store uploads stream their own body (up to 15 MB) and are never parsed as JSON. */
const UPLOAD_PATH = /^\/v1\/uploads\//
/** Slack's slash commands are form-encoded and signed over the raw bytes: that route reads its own body. */
const SLACK_COMMAND_PATH = /^\/v1\/chatops\/slack\/[^/]+\/commands$/
/** Git-host and issue-tracker webhooks: read raw by their route, which verifies the signature over the exact bytes. */
const GIT_HOOK_PATH = /^\/v1\/(git-hooks|tracker-hooks)\/[^/]+$/
/**
 * The links of reporter mails: RFC 8058 one-click unsubscribe (mail clients POST `List-Unsubscribe=One-Click`
 * form-encoded) and the double opt-in's confirm button (a form post); both routes ignore the body.
 */
const MAIL_LINK_PATH = /^\/v1\/mail\/(unsubscribe|confirm)$/

/** Longest request URL (path + query) fixloop answers; signed upload URLs stay far below it. */
export const MAX_URL_BYTES = 16 * 1024
/** Most bytes of request headers (names + values) fixloop answers. */
export const MAX_HEADER_BYTES = 32 * 1024

function headerBytes(headers: Headers): number {
  let n = 0
  headers.forEach((value, name) => (n += name.length + value.length + 4))
  return n
}

/**
 * The values a union of literals (`oneOf`) allows, or undefined for any other schema; a nested union and
 * `null` count too (`severity`: "low", "medium", "high", null).
 */
function allowedValues(schema: unknown): unknown[] | undefined {
  const anyOf = (schema as { anyOf?: unknown[] } | undefined)?.anyOf
  if (!Array.isArray(anyOf) || anyOf.length === 0) return undefined
  const out: unknown[] = []
  for (const s of anyOf as { const?: unknown; type?: unknown; format?: unknown; anyOf?: unknown }[]) {
    if (s && 'const' in s) out.push(s.const)
    // A boolean query parameter (t.BooleanString): the boolean itself, or its text.
    else if (s && (s.type === 'boolean' || (s.type === 'string' && s.format === 'boolean'))) out.push(true, false)
    else if (s && s.type === 'null') out.push(null)
    else if (s && Array.isArray(s.anyOf)) {
      const nested = allowedValues(s)
      if (!nested) return undefined
      out.push(...nested)
    } else return undefined
  }
  return [...new Set(out)]
}

/**
 * TypeBox error → `{ path, message }` with a JSON-pointer path, as put in details.issues. A field that
 * takes one of a few values names them (TypeBox would say "should be one of: 'string', 'string'").
 */
function issuesOf(error: ValidationError): { path: string; message: string }[] {
  try {
    // TypeBox reports a missing property twice ("is missing", then "Expected integer" for the undefined
    // value): one issue per path, the first (most specific) one.
    const byPath = new Map<string, string>()
    for (const e of error.all) {
      const path = 'path' in e && typeof e.path === 'string' ? e.path || '/' : '/'
      if (byPath.has(path)) continue
      if (byPath.size === 20) break
      // A missing field is "is missing" whatever it takes: its one-of values are for a value that is there.
      const absent = 'value' in e && e.value === undefined
      const allowed = !absent && 'schema' in e ? allowedValues(e.schema) : undefined
      // A chars() field fails as a custom kind ("Expected kind 'Chars'"): said as a String's refusal.
      const charsMessage = !absent && 'schema' in e && e.schema[Kind] === CHARS_KIND ? charsIssue(e.schema, e.value) : undefined
      byPath.set(path, allowed ? `${path === '/' ? 'value' : path.slice(1)} must be one of: ${allowed.map((v) => JSON.stringify(v)).join(', ')}` : (charsMessage ?? e.summary ?? e.message))
    }
    if (byPath.size > 0) return [...byPath].map(([path, message]) => ({ path, message }))
  } catch {
    // Fall through to the single message below.
  }
  return [{ path: '/', message: error.message }]
}

/**
 * The query parameter a coerced value came from. Elysia checks a numeric query parameter's range after
 * coercing it (`t.Numeric`) with the value alone, so its error carries no path: the parameter whose text
 * reads as that number is the one (`limit=0`, `limit=1e9`, `after=-1`).
 */
function queryParameterHolding(request: Request, value: unknown): string | undefined {
  if (typeof value !== 'number') return undefined
  for (const [name, raw] of new URL(request.url).searchParams) if (Object.is(Number(raw), value)) return name
  return undefined
}

/**
 * A query parameter's issue, said as one. Its path (`/appId`) reads like a body field's, so TypeBox's
 * "Property 'appId' is missing" sent callers of `POST /v1/tokens/mint` to put appId in the JSON body,
 * where it is refused again with the same words.
 */
function queryIssueMessage({ path, message }: { path: string; message: string }): string {
  const missing = /^Property '(.+)' is missing$/.exec(message)
  if (missing) return `query parameter ${missing[1]} is missing: add ?${missing[1]}=… to the URL`
  const unknown = /^Property '(.+)' should not be provided$/.exec(message)
  if (unknown) return `${unknown[1]} is not a query parameter of this route`
  const name = path.slice(1)
  if (!name) return `query string: ${message}`
  return message.startsWith(`${name} `) ? `query parameter ${message}` : `query parameter ${name}: ${message}`
}

function toApiError(code: string | number, error: unknown, request?: Request): ApiError {
  if (error instanceof ApiError) return error
  // Elysia wraps anything thrown by a parse hook in ParseError; our own parse errors (413 for a chunked
  // body over the limit, invalid_body for bad JSON) must keep their code.
  if (code === 'PARSE' && error instanceof Error && error.cause instanceof ApiError) return error.cause
  if (error instanceof ValidationError) {
    // A malformed path id has its own code (spec 4.5); everything else is the body/query's fault.
    if (error.type === 'params') return new ApiError('invalid_id')
    // A response that fails its own schema is our bug, not the client's.
    if (error.type === 'response') return new ApiError('internal_error')
    const issues = issuesOf(error)
    const name = error.type === 'property' && request ? queryParameterHolding(request, error.value) : undefined
    if (name !== undefined) for (const issue of issues) if (issue.path === '/') issue.path = `/${name}`
    if (error.type === 'query') {
      for (const issue of issues) issue.message = queryIssueMessage(issue)
      return invalidQuery(issues)
    }
    if (name !== undefined) return invalidQuery(issues)
    return new ApiError('invalid_body', { issues })
  }
  if (code === 'PARSE') return new ApiError('invalid_body', { issues: [{ path: '/', message: 'malformed JSON' }] })
  if (code === 'NOT_FOUND') return new ApiError('route_not_found')
  return new ApiError('internal_error')
}

/** The most of a path a log line keeps: an unmatched 16 KB path logged whole is a stranger filling the log. */
export const LOGGED_PATH_MAX = 200

/** The path for a log line; a request refused for its Host has no path worth logging (url-path.ts). */
function loggedPath(url: string): string {
  if (!hasUsableHost(url)) return '(invalid host)'
  const path = pathOfUrl(url)
  return path.length > LOGGED_PATH_MAX ? `${path.slice(0, LOGGED_PATH_MAX)}… (${path.length} characters)` : path
}

/** Seconds since onRequest; 0 when the request never passed it. */
function elapsedSeconds(request: Request): number {
  const t0 = startedAt.get(request)
  return t0 === undefined ? 0 : (performance.now() - t0) / 1000
}

/** `trustProxy`: FIXLOOP_TRUST_PROXY, so the logged client address is the one the rate limits use. */
/** `bodyBudget`: the bytes of JSON bodies held at once, per client address and in all (body-budget.ts). */
export function foundation(log: Logger, metrics?: RequestMetrics, trustProxy = false, bodyBudget?: BodyBudget) {
  const logRequests = log.enabled('info')
  // While the database is away (or its disk full) every request fails alike: one line per 30 s says so,
  // with how many it left out, instead of one error line per request (each has its request line anyway).
  const outage = failureLog(log)
  const app = new Elysia({ name: 'foundation' })
    .onRequest(({ request, set, server }) => {
      startedAt.set(request, performance.now())
      // Read now: once the response is sent the socket may be gone, and with it the peer address.
      if (logRequests) clientOf.set(request, clientAddress(request, server, trustProxy))
      const given = request.headers.get('x-request-id')
      set.headers['x-request-id'] = given && CLIENT_ID_RE.test(given) ? given : newId()
      // Every answer is what its Content-Type says (JSON errors and echoes of a reporter's text included):
      // no browser may sniff one into a page.
      set.headers['x-content-type-options'] = 'nosniff'
      const url = request.url
      // An invalid Host leaves Bun with a bare path for request.url (url-path.ts): nothing downstream
      // could tell where its path starts, so it is refused before routing.
      if (!hasUsableHost(url)) throw new ApiError('invalid_argument', { header: 'host' }, 'The Host header is not a valid host name.')
      const pathStart = url.indexOf('/', url.indexOf('//') + 2)
      if (url.length - pathStart > MAX_URL_BYTES) throw new ApiError('url_too_long', { limitBytes: MAX_URL_BYTES })
      if (headerBytes(request.headers) > MAX_HEADER_BYTES) throw new ApiError('headers_too_large', { limitBytes: MAX_HEADER_BYTES })
      const length = request.headers.get('content-length')
      if (length !== null && Number(length) > LIMITS.requestBodyMaxBytes && !UPLOAD_PATH.test(url.slice(pathStart))) {
        throw new ApiError('payload_too_large', { limitBytes: LIMITS.requestBodyMaxBytes })
      }
    })
    // NUL decoded from the URL where a route reads it (url-nul.ts): refused once routed (an unknown path
    // stays 404), before validation and authentication, like a malformed body. (A raw NUL never gets this
    // far: Bun's parser refuses it.)
    .onTransform({ as: 'global' }, ({ request, route, query }) => {
      const refused = nulInUrl(request.method, route, request.url, query)
      if (refused) throw refused
    })
    // A declared query parameter given twice (repeated-query.ts): after authentication, like a bad value.
    .onBeforeHandle({ as: 'global' }, ({ request, route, body }) => {
      const refused = repeatedQueryParameter(request.method, route, request.url)
      if (refused) throw refused
      // Fields sent to a route that takes no body (bodyless.ts): after authentication, like any bad body.
      const unexpected = bodyOnBodylessRoute(request.method, route, body)
      if (unexpected) throw unexpected
    })
    // Every JSON body goes through one reader that checks size, depth and Content-Type before parsing.
    .onParse({ as: 'global' }, async ({ request, server }) => {
      // null (not undefined): "parsed, no body" — undefined would hand the request to Elysia's own
      // parsers, which refuse an image/png body; the upload route streams the body itself.
      const path = pathOfUrl(request.url)
      if (UPLOAD_PATH.test(path) || MAIL_LINK_PATH.test(path)) return null
      const ticket = bodyBudget?.ticket(() => addressKey(clientAddress(request, server, trustProxy)))
      if (SLACK_COMMAND_PATH.test(path) || GIT_HOOK_PATH.test(path)) {
        // Read raw by the route (readBodyBounded), within the same budget.
        if (ticket) lendTicket(request, ticket)
        return null
      }
      return (await parseStrictJson(request, LIMITS.requestBodyMaxBytes, ticket)) ?? null
    })
    .onAfterHandle({ as: 'global' }, ({ request, route, set, response }) => {
      // API answers are the caller's own (keys and secrets on creation, reporters' data): no cache keeps
      // them, unless the route says how it may be cached (the widget's config).
      if (!(response instanceof Response) && set.headers['cache-control'] === undefined && (route.startsWith('/v1/') || route.startsWith('/admin/api/'))) {
        set.headers['cache-control'] = 'no-store'
      }
      const status = response instanceof Response ? response.status : typeof set.status === 'number' ? set.status : 200
      metrics?.observe(request.method, route || 'unmatched', status, elapsedSeconds(request))
    })
    .onError({ as: 'global' }, (c) => {
      const { code, error, set, request } = c
      const apiError = toApiError(code, error, request)
      const route = 'route' in c && typeof c.route === 'string' && code !== 'NOT_FOUND' ? c.route : 'unmatched'
      const requestId = String(set.headers['x-request-id'] ?? newId())
      set.headers['x-request-id'] = requestId
      if (apiError.code === 'internal_error') {
        apiError.headers = undefined
        // A refusal the server lifts shortly (errors.ts serviceUnavailable), or the database away (a
        // restart, a failover, the network): 503 with Retry-After, the same envelope.
        const busy = apiError.retryAfterSeconds ?? null
        const retryAfter = busy ?? (error instanceof ApiError ? null : storageUnavailable(error))
        if (retryAfter === null) {
          log.error('unhandled error', { requestId, method: request.method, path: loggedPath(request.url), error: error instanceof Error ? (error.stack ?? error.message) : String(error) })
        } else if (busy === null) outage('error', 'database unavailable', error, { requestId, method: request.method, path: loggedPath(request.url) })
        const envelope = (busy === null ? new ApiError('internal_error', { requestId }) : new ApiError('internal_error', { ...(apiError.details as object), requestId }, apiError.message)).toEnvelope()
        set.status = retryAfter === null ? 500 : 503
        // Counted as answered: a database outage is 503s on the dashboards, not 500s (bugs).
        metrics?.observe(request.method, route || 'unmatched', set.status, elapsedSeconds(request))
        if (retryAfter !== null) set.headers['retry-after'] = String(retryAfter)
        set.headers['content-type'] = JSON_CONTENT_TYPE
        return envelope
      }
      metrics?.observe(request.method, route || 'unmatched', apiError.status, elapsedSeconds(request))
      if (apiError.headers) Object.assign(set.headers, apiError.headers)
      set.status = apiError.status
      set.headers['content-type'] = JSON_CONTENT_TYPE
      return apiError.toEnvelope()
    })
  // The per-request line is only registered when it will be written: Elysia schedules an extra task per
  // request for an after-response hook (measured: ~30% of a list request's CPU at log level warn).
  if (!logRequests) return app
  return app.onAfterResponse({ as: 'global' }, ({ request, set, route, responseValue }) => {
    const t0 = startedAt.get(request)
    const caller = callerOf(request)
    log.info('request', {
      method: request.method,
      route: route || loggedPath(request.url),
      // A route that answers with a Response of its own (dashboard assets, SSO pages, redirects) carries its status there.
      status: responseValue instanceof Response ? responseValue.status : typeof set.status === 'number' ? set.status : 200,
      ms: t0 === undefined ? undefined : Math.round((performance.now() - t0) * 100) / 100,
      requestId: set.headers['x-request-id'],
      client: clientOf.get(request),
      orgId: caller?.orgId,
      appId: caller?.appId,
    })
  })
}
