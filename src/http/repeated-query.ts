/**
 * A query parameter a route declares, given twice (`?appId=a&appId=b`): refused, as a repeated `limit`
 * already was (query.ts), rather than silently reading one of the two values. Parameters the route does
 * not declare stay ignored, repeated or not (junk is harmless, docs/api.md).
 */
import { ApiError, invalidQuery } from '../core/errors'
import { declaredQueryOf } from './url-nul'

/** The refusal for a routed request naming one of its route's query parameters twice, else undefined. */
export function repeatedQueryParameter(method: string, route: string, url: string): ApiError | undefined {
  // The JSON APIs only: pages (mail links, sign-in callbacks) answer a bad link with a page of their own.
  if (!route.startsWith('/v1/') && !route.startsWith('/admin/api/')) return undefined
  const queryStart = url.indexOf('?')
  // The usual request has one parameter or none: no '&', nothing to compare.
  if (queryStart === -1 || !url.includes('&', queryStart)) return undefined
  const declared = declaredQueryOf(method, route)
  if (declared.length === 0) return undefined
  const params = new URLSearchParams(url.slice(queryStart + 1))
  for (const name of declared) {
    if (params.getAll(name).length > 1) return invalidQuery([{ path: `/${name}`, message: 'must be given once' }])
  }
  return undefined
}
