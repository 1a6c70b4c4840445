/**
 * Dashboard authentication: the session cookie, CSRF on every mutation, and the Org an admin acts on.
 *
 * CSRF: a mutation must carry the session's token in X-CSRF-Token. A cross-site form post cannot set a
 * header, and a cross-site fetch that tries is stopped by CORS (no credentials are ever allowed), so
 * the token alone refuses both; Sec-Fetch-Site "cross-site" and a foreign Origin are refused as well,
 * as a second line. SameSite=Lax keeps the cookie off cross-site subrequests in the first place.
 */
import { Elysia } from 'elysia'
import { ApiError } from '../core/errors'
import { pathOfUrl } from './url-path'
import { canSee, type AdminIdentity, type AdminsService } from '../modules/admins/service'
import type { Grant } from '../core/access'
import { csrfMatches, SESSION_COOKIE, SESSION_TTL_MS, type ActiveSession, type SessionStore } from '../modules/admins/sessions'

export interface AdminAuthDeps {
  admins: AdminsService
  sessions: SessionStore
  /** FIXLOOP_PUBLIC_URL: when https, the cookie is Secure. */
  publicUrl: string | undefined
  trustProxy: boolean
}

export interface AdminCaller {
  session: ActiveSession
  admin: AdminIdentity
}

/** The header naming the Org a cookie-authenticated /v1 request acts on. */
export const ORG_HEADER = 'x-fixloop-org'

export function readCookie(request: Request, name: string): string | undefined {
  const header = request.headers.get('cookie')
  if (!header) return undefined
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim()
  }
  return undefined
}

export function hasSessionCookie(request: Request): boolean {
  return readCookie(request, SESSION_COOKIE) !== undefined
}

const isMutation = (method: string) => !['GET', 'HEAD', 'OPTIONS'].includes(method)

/** The origins the dashboard itself is served from: this request's, FIXLOOP_PUBLIC_URL's, the proxy's. */
function ownOrigins(deps: AdminAuthDeps, request: Request): string[] {
  const own = [new URL(request.url).origin]
  if (deps.publicUrl) own.push(new URL(deps.publicUrl).origin)
  const fwdHost = request.headers.get('x-forwarded-host')
  if (deps.trustProxy && fwdHost) own.push(`${request.headers.get('x-forwarded-proto') ?? 'https'}://${fwdHost}`)
  return own
}

/** Refuses a mutation that is not provably from the dashboard's own pages. */
function checkCsrf(deps: AdminAuthDeps, request: Request, session: ActiveSession): void {
  if (request.headers.get('sec-fetch-site') === 'cross-site') throw new ApiError('csrf_failed')
  const origin = request.headers.get('origin')
  if (origin !== null && !ownOrigins(deps, request).includes(origin)) throw new ApiError('csrf_failed')
  if (!csrfMatches(session, request.headers.get('x-csrf-token'))) throw new ApiError('csrf_failed')
}

/**
 * Refuses a cross-site mutation aimed at the dashboard before its body is even read (a form post is not
 * JSON, and would otherwise be answered 400 by the body reader rather than 403 for what it is): any
 * /admin/api mutation, and a /v1 mutation that carries the session cookie instead of a key.
 */
export function crossSiteGuard(deps: AdminAuthDeps) {
  return new Elysia({ name: 'admin-cross-site-guard' }).onRequest(({ request }) => {
    if (!isMutation(request.method)) return
    const path = pathOfUrl(request.url)
    const dashboardCall = path.startsWith('/admin/api/') || (path.startsWith('/v1/') && !request.headers.has('authorization') && hasSessionCookie(request))
    if (!dashboardCall) return
    if (request.headers.get('sec-fetch-site') === 'cross-site') throw new ApiError('csrf_failed')
    const origin = request.headers.get('origin')
    if (origin !== null && !ownOrigins(deps, request).includes(origin)) throw new ApiError('csrf_failed')
  })
}

/** The signed-in admin; mutations must pass the CSRF check. */
export function authenticateAdmin(deps: AdminAuthDeps, request: Request): AdminCaller {
  const session = deps.sessions.resolve(readCookie(request, SESSION_COOKIE))
  if (!session) throw new ApiError('not_signed_in')
  const admin = deps.admins.identity(session.adminId)
  if (!admin) throw new ApiError('not_signed_in')
  if (isMutation(request.method)) checkCsrf(deps, request, session)
  return { session, admin }
}

/** The Org an admin acts on; one they cannot see is 404, like any other tenant's id. */
export function requireOrg(admin: AdminIdentity, orgId: string, exists: (orgId: string) => boolean): void {
  if (!canSee(admin, orgId) || !exists(orgId)) throw new ApiError('not_found')
}

/** What an admin is in an Org they can see (the instance owner is instance_owner in every Org). */
export function grantIn(admin: AdminIdentity, orgId: string): Grant {
  if (admin.isOwner) return 'instance_owner'
  const role = admin.roles.get(orgId)
  if (role === undefined) throw new ApiError('not_found')
  return role
}

function secureCookie(deps: AdminAuthDeps, request: Request): boolean {
  if (deps.publicUrl?.startsWith('https:')) return true
  if (new URL(request.url).protocol === 'https:') return true
  return deps.trustProxy && request.headers.get('x-forwarded-proto') === 'https'
}

export function sessionCookie(deps: AdminAuthDeps, request: Request, token: string): string {
  const secure = secureCookie(deps, request) ? '; Secure' : ''
  return `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${SESSION_TTL_MS / 1000}${secure}`
}

export function clearedCookie(deps: AdminAuthDeps, request: Request): string {
  const secure = secureCookie(deps, request) ? '; Secure' : ''
  return `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0${secure}`
}
