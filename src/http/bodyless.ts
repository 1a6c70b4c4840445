/**
 * Strict validation for routes that take no body (unmerge, reject-suggestion, resolve, rotate-secret, …).
 * Spec part 1: "Unknown fields on input are rejected by strict validation and yield invalid_body". A route
 * with a body schema gets that from its closed schema; a route without one would otherwise read past any
 * JSON sent to it (`POST /v1/feedback/:id/unmerge {"leadId": …}` unmerged and answered 200). An empty
 * body, JSON null and `{}` carry no field and stay accepted.
 */
import { ApiError } from '../core/errors'

/** "POST /v1/feedback/:id/unmerge" for every /v1 route whose schema declares no body. Filled when the app is built. */
const bodyless = new Set<string>()

/** Records the /v1 routes that declare no body (app.ts, with the app's routes). */
export function noteBodylessRoutes(routes: readonly { method: string; path: string; hooks?: unknown }[]): void {
  for (const r of routes) {
    // The JSON API only: the dashboard's own routes keep their forms as they are.
    if (!r.path.startsWith('/v1/')) continue
    if ((r.hooks as { body?: unknown } | undefined)?.body === undefined) bodyless.add(`${r.method} ${r.path}`)
  }
}

/** A member name as a JSON pointer token (RFC 6901), as the other issues' paths are. */
const pointerToken = (name: string): string => name.replace(/~/g, '~0').replace(/\//g, '~1')

/** The refusal for a parsed body sent to a route that takes none, else undefined. */
export function bodyOnBodylessRoute(method: string, route: string, body: unknown): ApiError | undefined {
  // Routes that read their own body (uploads, hooks) parse to null, as does an empty body.
  if (body === null || body === undefined || !bodyless.has(`${method} ${route}`)) return undefined
  if (typeof body === 'object' && !Array.isArray(body)) {
    const names = Object.keys(body)
    if (names.length === 0) return undefined
    return new ApiError('invalid_body', { issues: names.slice(0, 20).map((name) => ({ path: `/${pointerToken(name)}`, message: `Property '${name}' should not be provided` })) })
  }
  return new ApiError('invalid_body', { issues: [{ path: '/', message: 'this route takes no body' }] })
}
