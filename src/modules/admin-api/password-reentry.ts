/**
 * Proof that the signed-in admin is still the person at the keyboard, before a secret is revealed or TOTP
 * is turned on or off: the password re-entered, or (SSO admins, who may have none) a step-up
 * re-authentication at the identity provider made in this very session for this very action, at most
 * REAUTH_TTL_MS ago, used once (src/admin-ui/sso-routes.ts makes it; docs/security.md "Single sign-on").
 *
 * Failed password re-entries are audited (admin.password_reentry_failed, with what was attempted) and
 * throttled per admin with exponential back-off: a stolen session cannot be used to guess the password at
 * full speed. A missing proof is no guess: it is answered with how to give one, neither audited nor counted.
 */
import { ApiError } from '../../core/errors'
import { guard, type BackoffSpec } from '../../core/failure-throttle'
import type { ThrottleFactory } from '../../core/failure-throttle'
import type { AdminsService } from '../admins/service'
import type { ReauthPurpose, SessionStore } from '../admins/sessions'
import type { AuditLog } from '../audit/index'

export const REENTRY_BACKOFF: BackoffSpec = { freeFailures: 5, baseDelayMs: 1000, maxDelayMs: 15 * 60_000, forgetAfterMs: 3600_000 }

/** Where a signed-in admin starts a re-authentication at the identity provider (POST, X-CSRF-Token, `{purpose, returnTo}`). */
export const REAUTH_START_PATH = '/admin/api/me/reauth'
/** Where a signed-in admin confirms with the password for one action done without it (POST, X-CSRF-Token, `{purpose, password}`). */
export const REAUTH_PASSWORD_PATH = '/admin/api/me/reauth/password'

export type ReentryPurpose = ReauthPurpose

export interface ReentryContext {
  purpose: ReentryPurpose
  ip: string | null
  orgId?: string | null
  targetId?: string | null
}

/** A /v1 caller (http/org-caller.ts): its Org and, for a dashboard session, the session and its admin. */
export interface SessionOrKey {
  orgId: string
  session?: { id: string; adminId: string }
}

/** Who asks: the admin and the session a re-authentication would have been recorded on. */
export interface ReentryCaller {
  adminId: string
  sessionId: string
}

export interface ReentryDeps {
  admins: AdminsService
  sessions: Pick<SessionStore, 'consumeReauthentication' | 'markReauthenticated'>
  audit: AuditLog
  throttles: ThrottleFactory
  /** Single sign-on is configured: a re-authentication at the provider is offered. */
  sso: boolean
  /**
   * FIXLOOP_PASSWORD_SIGNIN (default on). Off, a password confirms nothing either: an admin created before
   * passwords were turned off still had one, and it confirmed what outlives the session (a key, a secret,
   * TOTP off, a repository's commands) without the identity provider whose sign-in the operator chose.
   */
  passwordSignIn?: boolean
}

export function createPasswordReentry({ admins, sessions, audit, throttles, sso, passwordSignIn = true }: ReentryDeps) {
  const throttle = throttles('reentry', REENTRY_BACKOFF)

  /** How to re-authenticate at the provider, for the error details (nothing when SSO is not configured). */
  const reauthHint = (purpose: ReentryPurpose) => (sso ? { reauth: REAUTH_START_PATH, method: 'POST', purpose } : {})

  async function byPassword(adminId: string, password: string, at: ReentryContext): Promise<void> {
    if (!passwordSignIn) {
      throw new ApiError(
        'invalid_credentials',
        { reauthRequired: true, passwordSignIn: false, ...reauthHint(at.purpose) },
        `Password sign-in is turned off on this server (FIXLOOP_PASSWORD_SIGNIN=off), so a password confirms nothing: confirm with the identity provider (POST ${REAUTH_START_PATH}), then try again within 5 minutes without a password.`,
      )
    }
    const wrong = (e: unknown) => e instanceof ApiError && e.code === 'invalid_credentials'
    try {
      await guard([{ throttle, key: adminId, clearOnSuccess: true }], () => admins.confirmPassword(adminId, password), wrong)
    } catch (e) {
      if (wrong(e)) await audit.record({ orgId: at.orgId ?? null, actor: `admin:${adminId}`, action: 'admin.password_reentry_failed', targetId: at.targetId ?? adminId, data: { purpose: at.purpose }, ip: at.ip })
      // An SSO-only admin's answer says where the other way is.
      if (e instanceof ApiError && (e.details as { noPassword?: boolean } | undefined)?.noPassword && sso) {
        throw new ApiError('invalid_credentials', { noPassword: true, ...reauthHint(at.purpose) }, `This admin has no password: confirm with the identity provider (POST ${REAUTH_START_PATH}), then try again within 5 minutes without a password.`)
      }
      throw e
    }
  }

  /**
   * Resolves when `password` is the admin's or, without a password, when the session holds an unused
   * re-authentication for `at.purpose` (now used up). Otherwise 401 invalid_credentials (a wrong
   * password: audited) or 429. `passwordFirst`: the request has no password field (a /v1 body shared
   * with `sk_` keys), so the password is given beforehand at REAUTH_PASSWORD_PATH, which the answer names.
   */
  async function confirm(caller: ReentryCaller, password: string | undefined, at: ReentryContext, { passwordFirst = false } = {}): Promise<void> {
    if (password) return byPassword(caller.adminId, password, at)
    if (await sessions.consumeReauthentication(caller.sessionId, at.purpose)) return
    const hasPassword = passwordSignIn && ((await admins.identity(caller.adminId))?.hasPassword ?? true)
    if (!hasPassword && !sso) throw new ApiError('invalid_credentials', { reauthRequired: true, noPassword: true }, 'This admin has no password and single sign-on is not configured: an operator sets a password with `fixloop admin reset-password` for this action.')
    const typed = passwordFirst ? `Confirm with your password first (POST ${REAUTH_PASSWORD_PATH} with {"purpose": "${at.purpose}", "password": …})` : 'Enter your password'
    const how = !hasPassword ? 'Confirm with the identity provider' : sso ? `${typed}, or confirm with the identity provider` : typed
    throw new ApiError(
      'invalid_credentials',
      { reauthRequired: true, ...(hasPassword ? {} : { noPassword: true }), ...(hasPassword && passwordFirst ? { passwordReauth: REAUTH_PASSWORD_PATH, purpose: at.purpose } : {}), ...reauthHint(at.purpose) },
      `${how}${sso ? ` (POST ${REAUTH_START_PATH} with {"purpose": "${at.purpose}"}; it is good for 5 minutes and one use)` : passwordFirst ? '; it is good for 5 minutes and one use' : ''}.`,
    )
  }

  return {
    confirm,

    /**
     * Records on the session a confirmation by password for `at.purpose`, used like one at the identity
     * provider (once, within REAUTH_TTL_MS): for actions whose request body is shared with `sk_` keys and
     * so has no place for a password (POST REAUTH_PASSWORD_PATH). A wrong password is audited and
     * throttled as above; a right one is audited as admin.reauthenticated, method "password".
     */
    async record(caller: ReentryCaller, password: string, at: ReentryContext): Promise<void> {
      await byPassword(caller.adminId, password, at)
      if (!(await sessions.markReauthenticated(caller.sessionId, caller.adminId, at.purpose))) throw new ApiError('not_signed_in')
      await audit.record({ orgId: null, actor: `admin:${caller.adminId}`, action: 'admin.reauthenticated', targetId: caller.adminId, data: { method: 'password', purpose: at.purpose }, ip: at.ip })
    },

    /**
     * For a /v1 route shared with `sk_` keys that sets where the Org's data keeps going (a webhook
     * endpoint, SMTP, Slack, a tracker): a dashboard session must hold an unused confirmation for
     * `at.purpose` (used up here), else 401 as `confirm` answers. An `sk_` key passes unchanged: it is
     * a credential that outlives sessions already, and its callers' request bodies must not change.
     */
    async confirmSession(org: SessionOrKey, at: Omit<ReentryContext, 'orgId'>): Promise<void> {
      if (!org.session) return
      await confirm({ adminId: org.session.adminId, sessionId: org.session.id }, undefined, { ...at, orgId: org.orgId }, { passwordFirst: true })
    },
  }
}
export type PasswordReentry = ReturnType<typeof createPasswordReentry>
