/**
 * The NUL rule (core/nul.ts) for the request URL: a `%00` that a route would read reaches the database
 * as a parameter, where PostgreSQL refuses it (a 500) and SQLite stores it. A route reads its path
 * parameters and the query parameters its schema declares; any other query parameter is ignored (junk
 * stays harmless, as documented in docs/api.md), so only those are checked.
 */
import { ApiError, invalidQuery } from '../core/errors'
import { NUL, NUL_MESSAGE } from '../core/nul'

/** "GET /v1/feedback" → the query parameters the route's schema declares. Filled when the app is built. */
const declaredQuery = new Map<string, readonly string[]>()

/** Records, per route, the query parameters its schema declares (app.ts, with the app's routes). */
export function noteDeclaredQueries(routes: readonly { method: string; path: string; hooks?: unknown }[]): void {
  for (const r of routes) {
    const schema = (r.hooks as { query?: { properties?: Record<string, unknown> } } | undefined)?.query
    if (schema?.properties) declaredQuery.set(`${r.method} ${r.path}`, Object.keys(schema.properties))
  }
}

/** The query parameters route `route` (for `method`) declares (empty when it declares none). */
export function declaredQueryOf(method: string, route: string): readonly string[] {
  return declaredQuery.get(`${method} ${route}`) ?? []
}

const holdsNul = (v: unknown): boolean => (typeof v === 'string' ? v.includes(NUL) : Array.isArray(v) && v.some(holdsNul))

/**
 * The refusal for a routed request whose URL carries NUL where the route reads it, else undefined: in the
 * path, 400 invalid_id (a malformed id or name, spec 4.5); in a declared query parameter, 400
 * invalid_body naming it, like any bad query parameter.
 */
export function nulInUrl(method: string, route: string, url: string, query: Record<string, unknown>): ApiError | undefined {
  const pathStart = url.indexOf('/', url.indexOf('//') + 2)
  // The usual request has no %00 at all: one native search settles it.
  if (!url.includes('%00', pathStart)) return undefined
  const queryStart = url.indexOf('?', pathStart)
  const pathEnd = queryStart === -1 ? url.length : queryStart
  if (url.slice(pathStart, pathEnd).includes('%00')) return new ApiError('invalid_id', undefined, `The path ${NUL_MESSAGE}.`)
  for (const name of declaredQueryOf(method, route)) {
    if (holdsNul(query[name])) return invalidQuery([{ path: `/${name}`, message: `query parameter ${name} ${NUL_MESSAGE}` }])
  }
  return undefined
}
