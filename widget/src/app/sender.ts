/**
 * Sends reports from the queue: the one the user just sent and, on load and when the browser comes
 * back online, every report still waiting. A report in flight is never sent twice from this page;
 * across tabs the Idempotency-Key makes a second send a replay, not a duplicate.
 */
import type { Core } from '../types'
import { on } from '../safe-dom'
import { queuedReports, removeReport, type QueuedReport } from './queue'
import { sendReport, TokenSource, type SendResult } from './transport'
import { Proofs } from './proof'
import { HELD_MAX_AGE_MS, noteDropped } from './dropped-notes'

const RETRY_LATER_MS = 30_000

export class Sender {
  readonly tokens: TokenSource
  /** Public mode's proof-of-work solutions (private mode skips them: the user token is the proof). */
  readonly proofs?: Proofs
  private readonly inFlight = new Set<string>()
  /** The reports this page wrote (their Idempotency-Keys): one written without a user token is its user's. */
  private readonly written = new Set<string>()
  private timer?: ReturnType<typeof setTimeout>
  /** The dialog's "Checking you're not a bot…" while a Send waits for its proof of work. */
  onProofWait?: (waiting: boolean) => void

  constructor(private readonly core: Core) {
    this.tokens = new TokenSource(core.options.getUserToken)
    if (!this.tokens.enabled) this.proofs = new Proofs(core.fetch, core.endpoint, core.options.publicKey, core.workerURL, (waiting) => this.onProofWait?.(waiting))
    on(window, 'online', () => void this.flush())
  }

  /**
   * Sends one report; the outcome is reported to the customer's callbacks. `fresh`: this page just wrote
   * it (so a report written without a user token belongs to this page's user); queued ones are not.
   */
  async send(report: QueuedReport, fresh = false): Promise<SendResult> {
    if (fresh) this.written.add(report.key)
    if (this.inFlight.has(report.key)) return { kind: 'later', status: 0, code: 'in_flight', message: 'already sending' }
    this.inFlight.add(report.key)
    try {
      const result = await sendReport(this.core.fetch, report, this.tokens, this.proofs, this.written.has(report.key))
      // Another user's report (private mode): not this page's to send or to report on; it stays queued
      // until it has waited HELD_MAX_AGE_MS (a missing or unreadable createdAt counts as old). Then it goes,
      // so it no longer holds one of the 30 queue slots for good: one without owner (queued by an older
      // widget, or written offline by a user who signed out before any token bound it) can never be sent,
      // nobody can tell whose it is; one whose owner has not been back since leaves them a note, which
      // the dialog shows them when they are (dropped-notes.ts). Its owner's own page sends it at any age.
      if (result.kind === 'held') {
        if (!this.written.has(report.key) && !(Date.now() - report.createdAt <= HELD_MAX_AGE_MS)) {
          await removeReport(report.key).then(
            () => report.owner !== undefined && noteDropped({ key: report.key, endpoint: report.endpoint, publicKey: report.publicKey, owner: report.owner, writtenAt: Number(report.createdAt) || 0 }),
            () => undefined,
          )
        }
        return result
      }
      const { onSubmitSuccess, onSubmitError } = this.core.options
      if (result.kind === 'sent') {
        await removeReport(report.key).catch(() => undefined)
        onSubmitSuccess?.({ id: result.id, status: result.status })
      } else {
        if (result.kind === 'rejected') await removeReport(report.key).catch(() => undefined)
        else this.retryLater()
        onSubmitError?.({ status: result.status, code: result.code, message: result.message, queued: result.kind === 'later' })
      }
      return result
    } finally {
      this.inFlight.delete(report.key)
    }
  }

  /**
   * Sends every waiting report of this App, oldest first; stops at the first one that must wait. Another
   * user's reports (private mode) are passed over: they wait for their user.
   */
  async flush(): Promise<void> {
    const mine = (await queuedReports().catch(() => [] as QueuedReport[]))
      .filter((r) => r.endpoint === this.core.endpoint && r.publicKey === this.core.options.publicKey)
      .sort((a, b) => a.createdAt - b.createdAt)
    for (const report of mine) {
      if ((await this.send(report)).kind === 'later') break
    }
  }

  /**
   * The page's user signed out (Fixloop.resetUser): their token goes, and a report they wrote that no
   * token has bound yet (written offline) is no longer this page's to bind: it would be the next user's.
   */
  forgetUser(): void {
    this.tokens.forget()
    this.written.clear()
  }

  private retryLater(): void {
    clearTimeout(this.timer)
    this.timer = setTimeout(() => void this.flush(), RETRY_LATER_MS)
  }
}
