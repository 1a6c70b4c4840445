/**
 * Which cross-origin requests a browser may make. Only the widget routes are open to browsers:
 * POST /v1/feedback and POST /v1/feedback/upload-url (and the embedded store's PUT). `sk_` routes are
 * server-side only and get no Access-Control-Allow-Origin.
 *
 * A preflight carries no key, so it cannot name the App: it is allowed when some live App accepts
 * the origin. The real request is then held to its own App's allowedOrigins (403 origin_not_allowed),
 * and its response only carries Access-Control-Allow-Origin when that App accepts the origin.
 */
import type { CredentialDirectory } from '../auth/directory'

export const WIDGET_CORS_HEADERS = ['Authorization', 'X-Service-User-Token', 'Content-Type', 'Idempotency-Key']

const WIDGET_POST_PATHS = new Set(['/v1/feedback', '/v1/feedback/upload-url'])

function isWidgetRoute(method: string, path: string): boolean {
  if (method === 'POST') return WIDGET_POST_PATHS.has(path)
  if (method === 'PUT') return path.startsWith('/v1/uploads/')
  return false
}

function pathOf(url: string): string {
  const start = url.indexOf('/', url.indexOf('//') + 2)
  const q = url.indexOf('?', start)
  return q === -1 ? url.slice(start) : url.slice(start, q)
}

export function corsOrigin(directory: CredentialDirectory) {
  return (request: Request): boolean => {
    const origin = request.headers.get('origin')
    if (!origin) return false
    const path = pathOf(request.url)
    const method = request.method === 'OPTIONS' ? (request.headers.get('access-control-request-method') ?? '').toUpperCase() : request.method
    if (!isWidgetRoute(method, path)) return false
    // An embedded upload URL names its App in the path: hold it to that App's origins, preflight included.
    if (method === 'PUT') {
      const app = directory.appById(path.split('/')[3] ?? '')
      return !!app && (app.allowedOrigins.size === 0 || app.allowedOrigins.has(origin))
    }
    if (request.method === 'OPTIONS') return directory.anyAppAcceptsOrigin(origin)
    const auth = request.headers.get('authorization') ?? ''
    const key = /^bearer /i.test(auth) ? auth.slice(7).trim() : ''
    if (!key.startsWith('pub_')) return false
    const app = directory.appByPublicKey(key)
    if (!app) return false
    return app.allowedOrigins.size === 0 || app.allowedOrigins.has(origin)
  }
}
