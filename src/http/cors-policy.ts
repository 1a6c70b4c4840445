/**
 * Which cross-origin requests a browser may make. Only the widget routes are open to browsers:
 * POST /v1/feedback and POST /v1/feedback/upload-url (and the embedded store's PUT), GET /v1/me/feedback
 * (the widget's "Your reports": a pub_ key plus a user token), GET /v1/widget/challenge (proof of work) and
 * GET /v1/widget/config (the App's settings the widget needs at page load, e.g. session replay). `sk_` routes are
 * server-side only and get no Access-Control-Allow-Origin.
 *
 * A preflight carries no key, so it cannot name the App: it is allowed when some live App accepts
 * the origin. The real request is then held to its own App's allowedOrigins (403 origin_not_allowed),
 * and its response only carries Access-Control-Allow-Origin when that App accepts the origin.
 *
 * `widgetCors` decides Access-Control-Allow-Origin (with `corsOrigin`, which awaits the credential
 * directory: a PostgreSQL lookup is asynchronous, which @elysiajs/cors's origin callback cannot be) and
 * adds everything else a browser needs (allowed methods and headers, exposed headers, the preflight
 * answer) on widget routes only, so an sk_ route answers with no CORS header at all.
 */
import { Elysia } from 'elysia'
import type { CredentialDirectory } from '../auth/directory'
import { pathOfUrl } from './url-path'

export const WIDGET_CORS_HEADERS = ['Authorization', 'X-Service-User-Token', 'Content-Type', 'Idempotency-Key', 'X-Fixloop-Proof-Of-Work']
const EXPOSED_HEADERS = ['X-Request-Id', 'Retry-After', 'Idempotent-Replayed']
const PREFLIGHT_MAX_AGE = 600

const WIDGET_POST_PATHS = new Set(['/v1/feedback', '/v1/feedback/upload-url'])

const WIDGET_GET_PATHS = new Set(['/v1/me/feedback', '/v1/widget/challenge', '/v1/widget/config'])

function isWidgetRoute(method: string, path: string): boolean {
  if (method === 'POST') return WIDGET_POST_PATHS.has(path)
  if (method === 'GET') return WIDGET_GET_PATHS.has(path)
  if (method === 'PUT') return path.startsWith('/v1/uploads/')
  return false
}

export function corsOrigin(directory: CredentialDirectory) {
  return async (request: Request): Promise<boolean> => {
    const origin = request.headers.get('origin')
    if (!origin) return false
    const path = pathOfUrl(request.url)
    const method = request.method === 'OPTIONS' ? (request.headers.get('access-control-request-method') ?? '').toUpperCase() : request.method
    if (!isWidgetRoute(method, path)) return false
    // An embedded upload URL names its App in the path: hold it to that App's origins, preflight included.
    if (method === 'PUT') {
      const app = await directory.appById(path.split('/')[3] ?? '')
      return !!app && (app.allowedOrigins.size === 0 || app.allowedOrigins.has(origin))
    }
    if (request.method === 'OPTIONS') return directory.anyAppAcceptsOrigin(origin)
    const auth = request.headers.get('authorization') ?? ''
    const key = /^bearer /i.test(auth) ? auth.slice(7).trim() : ''
    if (!key.startsWith('pub_')) return false
    const app = await directory.appByPublicKey(key)
    if (!app) return false
    return app.allowedOrigins.size === 0 || app.allowedOrigins.has(origin)
  }
}

/**
 * The CORS headers of the widget routes (Access-Control-Allow-Origin from `corsOrigin`), and the preflight's
 * 204. A preflight for any other route falls through to routing (404 in the envelope, no CORS header).
 */
export function widgetCors(directory: CredentialDirectory) {
  const allowOrigin = corsOrigin(directory)
  const preflightAnswer = (headers: Record<string, string | number>) => {
    headers['access-control-allow-methods'] = 'GET, POST, PUT'
    headers['access-control-allow-headers'] = WIDGET_CORS_HEADERS.join(', ')
    headers['access-control-max-age'] = String(PREFLIGHT_MAX_AGE)
    return new Response(null, { status: 204, headers: headers as Record<string, string> })
  }
  // Synchronous unless the request names an Origin: backends, curl and load tests send none, and an async
  // hook would cost every request of the intake path a promise and a microtask turn.
  return new Elysia({ name: 'widget-cors' }).onRequest(({ request, set }) => {
    const preflight = request.method === 'OPTIONS' && request.headers.has('access-control-request-method')
    const method = preflight ? (request.headers.get('access-control-request-method') ?? '').toUpperCase() : request.method
    // An sk_ route's answer does not vary by origin: no CORS header at all.
    if (!isWidgetRoute(method, pathOfUrl(request.url))) return
    const headers = set.headers as Record<string, string | number>
    headers.vary = 'Origin'
    headers['access-control-expose-headers'] = EXPOSED_HEADERS.join(', ')
    const origin = request.headers.get('origin')
    if (!origin) return preflight ? preflightAnswer(headers) : undefined
    return allowOrigin(request).then((allowed) => {
      if (allowed) headers['access-control-allow-origin'] = origin
      return preflight ? preflightAnswer(headers) : undefined
    })
  })
}
