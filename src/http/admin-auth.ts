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

/**
 * The session cookie's name. Over https it is `__Host-fixloop_admin`: a browser keeps such a cookie only
 * when it was set Secure, with Path=/ and no Domain, by this very host, so nothing else (a sibling
 * subdomain, a plain-http page, another port's app) can plant or shadow it. Over plain http (the default
 * http://127.0.0.1:8080, a LAN address) the prefix is impossible (it needs Secure, which not every browser
 * keeps over http) and the name is `fixloop_admin`. Each mode reads only its own name.
 */
export const SECURE_SESSION_COOKIE = `__Host-${SESSION_COOKIE}`

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

/** Every value sent under this cookie name, in the order the browser sent them. */
export function readCookies(request: Request, name: string): string[] {
  const header = request.headers.get('cookie')
  if (!header) return []
  const values: string[] = []
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0 && part.slice(0, eq).trim() === name) values.push(part.slice(eq + 1).trim())
  }
  return values
}

export function sessionCookieName(deps: AdminAuthDeps, request: Request): string {
  return secureCookie(deps, request) ? SECURE_SESSION_COOKIE : SESSION_COOKIE
}

export type SessionCookie = { token: string } | { ambiguous: true } | undefined

/**
 * The session cookie of this request. Two of them (a second one planted for a parent domain or a longer
 * path, which browsers send first) are ambiguous: neither is used, rather than letting the planted one
 * sign the victim in as someone else.
 */
export function sessionCookieOf(deps: AdminAuthDeps, request: Request): SessionCookie {
  const values = readCookies(request, sessionCookieName(deps, request))
  if (values.length === 0) return undefined
  return values.length === 1 ? { token: values[0] } : { ambiguous: true }
}

export function hasSessionCookie(deps: AdminAuthDeps, request: Request): boolean {
  return sessionCookieOf(deps, request) !== undefined
}

const AMBIGUOUS = 'Two session cookies were sent, so neither is used (one may have been planted by another site). Clear the cookies of this site and sign in again.'

/**
 * The live session behind the request's cookie, or undefined (none, unknown, expired, revoked). Throws
 * when ambiguous. `touch: false` for a check that is not the admin's activity (sessions.ts `resolve`).
 */
export function resolveSession(deps: AdminAuthDeps, request: Request, options?: { touch?: boolean }): Promise<ActiveSession | undefined> {
  const cookie = sessionCookieOf(deps, request)
  if (cookie && 'ambiguous' in cookie) throw new ApiError('not_signed_in', { ambiguousCookie: true }, AMBIGUOUS)
  return deps.sessions.resolve(cookie?.token, options)
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
    const dashboardCall = path.startsWith('/admin/api/') || (path.startsWith('/v1/') && !request.headers.has('authorization') && hasSessionCookie(deps, request))
    if (!dashboardCall) return
    if (request.headers.get('sec-fetch-site') === 'cross-site') throw new ApiError('csrf_failed')
    const origin = request.headers.get('origin')
    if (origin !== null && !ownOrigins(deps, request).includes(origin)) throw new ApiError('csrf_failed')
  })
}

/** The signed-in admin; mutations must pass the CSRF check. */
export async function authenticateAdmin(deps: AdminAuthDeps, request: Request): Promise<AdminCaller> {
  const session = await resolveSession(deps, request)
  if (!session) throw new ApiError('not_signed_in')
  const admin = await deps.admins.identity(session.adminId)
  if (!admin) throw new ApiError('not_signed_in')
  if (isMutation(request.method)) checkCsrf(deps, request, session)
  return { session, admin }
}

/** The Org an admin acts on; one they cannot see is 404, like any other tenant's id. */
export async function requireOrg(admin: AdminIdentity, orgId: string, exists: (orgId: string) => Promise<boolean>): Promise<void> {
  if (!canSee(admin, orgId) || !(await exists(orgId))) throw new ApiError('not_found')
}

/** What an admin is in an Org they can see (the instance owner is instance_owner in every Org). */
export function grantIn(admin: AdminIdentity, orgId: string): Grant {
  if (admin.isOwner) return 'instance_owner'
  const role = admin.roles.get(orgId)
  if (role === undefined) throw new ApiError('not_found')
  return role
}

/** Whether cookies are set Secure (and take the `__Host-` prefix): https to the browser, however we know it. */
export function secureCookie(deps: AdminAuthDeps, request: Request): boolean {
  if (deps.publicUrl?.startsWith('https:')) return true
  if (new URL(request.url).protocol === 'https:') return true
  return deps.trustProxy && request.headers.get('x-forwarded-proto') === 'https'
}

export function sessionCookie(deps: AdminAuthDeps, request: Request, token: string): string {
  const secure = secureCookie(deps, request) ? '; Secure' : ''
  return `${sessionCookieName(deps, request)}=${token}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${SESSION_TTL_MS / 1000}${secure}`
}

export function clearedCookie(deps: AdminAuthDeps, request: Request): string {
  const secure = secureCookie(deps, request) ? '; Secure' : ''
  return `${sessionCookieName(deps, request)}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0${secure}`
}
