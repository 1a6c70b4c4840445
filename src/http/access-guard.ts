/**
 * The one place a route's role is checked. Every `/v1` and `/admin/api` route declares
 * `access: <Access>` (src/core/access.ts); the macro below checks it for whichever credential the
 * route's authentication derived: `org` (an `sk_` key, or a dashboard session acting on an Org through
 * `/v1`) or `caller` (a dashboard session on `/admin/api`, its Org named in the path).
 *
 * It runs in the transform stage, after authentication and before validation: a caller without the
 * role is refused 403 `forbidden` before its body is judged, as an unauthenticated one is refused 401.
 * The declaration is also written into the route's OpenAPI operation (`x-fixloop-access`), and
 * `assertEveryRouteDeclaresAccess` refuses to build an app with a route that declares nothing.
 */
import { Elysia } from 'elysia'
import { ApiError } from '../core/errors'
import { ID_PATTERN } from '../core/ids'
import { allows, isPermission, type Access } from '../core/access'
import type { OrgCaller } from './org-caller'
import { grantIn, requireOrg, type AdminCaller } from './admin-auth'

export const ACCESS_EXTENSION = 'x-fixloop-access'
const ID_RE = new RegExp(ID_PATTERN)

export interface AccessGuardOptions {
  /** For dashboard routes naming an Org in the path: an unknown Org is 404 like another tenant's. */
  orgExists?: (orgId: string) => Promise<boolean>
}

interface GuardedContext {
  org?: OrgCaller
  caller?: AdminCaller
  params?: Record<string, string | undefined>
}

/** Refuses the request unless its caller holds the route's permission. */
async function enforce(access: Access, ctx: GuardedContext, options: AccessGuardOptions): Promise<void> {
  if (!isPermission(access)) {
    // Open routes authenticate on their own; `signed_in` only needs the session the derive checked.
    if (access === 'signed_in' && !ctx.caller) throw new ApiError('not_signed_in')
    return
  }
  if (ctx.org) {
    if (!allows(ctx.org.grant, access)) throw new ApiError('forbidden')
    return
  }
  // A route that declares a permission but derived no caller is a wiring bug: refuse, never serve.
  if (!ctx.caller) throw new ApiError('internal_error')
  const { admin } = ctx.caller
  const orgId = ctx.params?.orgId
  if (orgId === undefined) {
    // Not about one Org (creating Orgs): only the instance owner holds such a permission.
    if (!admin.isOwner || !allows('instance_owner', access)) throw new ApiError('forbidden')
    return
  }
  if (!ID_RE.test(orgId)) throw new ApiError('invalid_id')
  if (!options.orgExists) throw new ApiError('internal_error')
  await requireOrg(admin, orgId, options.orgExists)
  if (!allows(grantIn(admin, orgId), access)) throw new ApiError('forbidden')
}

/** The `access` route option. Use it in every module that declares `/v1` or `/admin/api` routes. */
export function accessGuard(options: AccessGuardOptions = {}) {
  return new Elysia().macro({
    access: (access: Access) => {
      const detail = { [ACCESS_EXTENSION]: access } as Record<string, string>
      // Widget, signed-URL and Slack routes check their own credential: no hook on the intake hot path.
      if (!isPermission(access) && access !== 'signed_in') return { detail }
      return { detail, transform: async (ctx) => enforce(access, ctx as unknown as GuardedContext, options) }
    },
  })
}

/** The guarded surface: every route here must declare its access. */
export const isGuardedPath = (path: string) => path.startsWith('/v1/') || path === '/v1' || path.startsWith('/admin/api/')

/** Throws, naming them, when routes of the guarded surface declare no access (checked when the app is built). */
export function assertEveryRouteDeclaresAccess(routes: readonly { method: string; path: string; hooks?: unknown }[]): void {
  const missing = routes
    .filter((r) => isGuardedPath(r.path) && r.method !== 'OPTIONS')
    .filter((r) => {
      const detail = (r.hooks as { detail?: Record<string, unknown> } | undefined)?.detail
      return typeof detail?.[ACCESS_EXTENSION] !== 'string'
    })
    .map((r) => `${r.method} ${r.path}`)
  if (missing.length > 0) throw new Error(`routes without a declared access (src/core/access.ts): ${missing.join(', ')}`)
}
