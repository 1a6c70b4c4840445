/**
 * Password re-entry by a signed-in admin, before a secret is revealed or TOTP is turned on or off.
 * Failures are audited (admin.password_reentry_failed, with what was attempted) and throttled per admin
 * with exponential back-off: a stolen session cannot be used to guess the password at full speed.
 */
import { ApiError } from '../../core/errors'
import { guard, type BackoffSpec } from '../../core/failure-throttle'
import type { ThrottleFactory } from '../../core/failure-throttle'
import type { AdminsService } from '../admins/service'
import type { AuditLog } from '../audit/index'

export const REENTRY_BACKOFF: BackoffSpec = { freeFailures: 5, baseDelayMs: 1000, maxDelayMs: 15 * 60_000, forgetAfterMs: 3600_000 }

export type ReentryPurpose = 'secret_reveal' | 'totp_enable' | 'totp_disable'

export interface ReentryContext {
  purpose: ReentryPurpose
  ip: string | null
  orgId?: string | null
  targetId?: string | null
}

export function createPasswordReentry(admins: AdminsService, audit: AuditLog, throttles: ThrottleFactory) {
  const throttle = throttles('reentry', REENTRY_BACKOFF)
  return {
    /** Resolves when the password is the admin's; 401 invalid_credentials (audited) or 429 otherwise. */
    async confirm(adminId: string, password: string, at: ReentryContext): Promise<void> {
      const wrong = (e: unknown) => e instanceof ApiError && e.code === 'invalid_credentials'
      try {
        await guard([{ throttle, key: adminId, clearOnSuccess: true }], () => admins.confirmPassword(adminId, password), wrong)
      } catch (e) {
        if (wrong(e)) await audit.record({ orgId: at.orgId ?? null, actor: `admin:${adminId}`, action: 'admin.password_reentry_failed', targetId: at.targetId ?? adminId, data: { purpose: at.purpose }, ip: at.ip })
        throw e
      }
    },
  }
}
export type PasswordReentry = ReturnType<typeof createPasswordReentry>
