/** Who calls an Org's routes, as authentication found them (http/auth.ts) and the access guard checks them. */
import type { Grant } from '../core/access'

export interface OrgCaller {
  orgId: string
  keyId: string
  /** What the caller is in this Org; the access guard checks it against the route's permission. */
  grant: Grant
  /** Who, for the audit log: "key:<id>" or "admin:<id>". */
  actor: string
  /**
   * The dashboard session behind the call (absent for an `sk_` key): the routes that set where the Org's
   * data keeps going ask it for a fresh re-authentication (admin-api/password-reentry.ts `confirmSession`).
   */
  session?: { id: string; adminId: string }
}
