/**
 * Taking one report in from the widget or a backend (POST /v1/feedback), as one call: proof of work
 * (public mode, when the App asks for it: a valid, unused solution or 403), the spam signals known now
 * (in memory: a report that trips them is answered 201 all the same, into the spam folder), the extra
 * charge of a heavy report on its sender's bucket, then the stored submission. The route only declares
 * the request and hands it here.
 */
import type { KnownApp } from '../../auth/directory'
import type { UserIdentity } from '../../auth/user-token'
import type { PowService } from '../../abuse/pow-service'
import type { SpamIntake } from '../../abuse/spam-intake'
import type { FeedbackService, SubmitResult } from './service'
import type { SubmitBody } from './model'
import { extraTokens } from './submit-cost'

/** Who submits, as authentication found them (src/http/auth.ts `WidgetCaller`). */
export interface IntakeCaller {
  app: KnownApp
  /** Set in private mode (a verified user token). */
  user: UserIdentity | undefined
  clientIp: string
  /** What every per-address limit counts this caller under (IPv6 per /64). */
  clientKey: string
  /** Takes `extra` more tokens from the bucket this request was let in by. */
  charge(extra: number): void | Promise<void>
}

export interface IntakeRequest {
  body: SubmitBody
  userAgent: string | null
  idempotencyKey: string | undefined
  /** The proof-of-work header's value (public mode), or null. */
  proofOfWork: string | null
}

/** The App's own sites (host names without `www.`): its allowed origins and the page the report was sent from. */
function ownSitesOf(allowedOrigins: ReadonlySet<string>, pageUrl: string | undefined): Set<string> {
  const sites = new Set<string>()
  for (const u of [...allowedOrigins, ...(pageUrl ? [pageUrl] : [])]) {
    try {
      sites.add(new URL(u).hostname.toLowerCase().replace(/^www\./, ''))
    } catch {
      // not a URL: nothing to exclude
    }
  }
  return sites
}

export function createIntake(deps: { feedback: FeedbackService; pow: PowService; spam: SpamIntake }) {
  return {
    async submit(caller: IntakeCaller, req: IntakeRequest): Promise<SubmitResult> {
      const { body } = req
      let spam = null
      if (!caller.user) {
        const app = { id: caller.app.row.id, proofOfWork: caller.app.row.proofOfWork }
        const solved = await deps.pow.check(app, caller.clientKey, req.proofOfWork)
        spam = await deps.spam.classify(app, caller.clientKey, body.text, body.clientSignals, solved, ownSitesOf(caller.app.allowedOrigins, body.url))
      }
      // A heavy report (much free text to sanitize) takes more of its sender's bucket (submit-cost.ts).
      const charged = caller.charge(extraTokens(body))
      if (charged) await charged
      return deps.feedback.submit({
        app: caller.app,
        user: caller.user,
        body,
        requestUserAgent: req.userAgent,
        idempotencyKey: req.idempotencyKey,
        clientIp: caller.clientIp,
        spam,
      })
    },
  }
}
export type Intake = ReturnType<typeof createIntake>
