/**
 * Tells reporters that their report was resolved (docs/email.md). Two steps, both idempotent:
 *  1. queue: a report in `resolved` whose reporter opted in (feedback.notify_email_sealed set) gets ONE
 *     row in mail_outbox (its primary key is the report id), and the address leaves the report row in the
 *     same transaction, so a report is mailed once. The lead and its duplicates are resolved together, and
 *     one person may have opted in on several of them: a row whose address (its keyed hash, of the
 *     lower-cased address) already has a mail for the same lead is settled `same_address`, never sent, so
 *     it is one mail per address per resolution of a lead.
 *  2. send: pending rows are claimed with a lease (one claimer per row, also across nodes), sent through
 *     the App's SMTP server, and settled; a failure is retried with exponential backoff, never blocking
 *     anything else (the lifecycle never waits for mail).
 * Before both, the double opt-in: a public-mode opt-in (an address an anonymous submitter typed) gets ONE
 * confirmation mail per App and normalized address (rate-limited per App and per address), and its report's
 * mail is sent only once that address is confirmed (docs/email.md "Confirming a public-mode address").
 * In cluster mode only the node holding the `dispatch` role runs it (like the webhook and Slack dispatchers).
 */
import type { Logger } from '../../core/logger'
import type { Store } from '../../db/store'
import type { SecretBox } from '../../core/crypto'
import type { Clock } from '../../core/clock'
import type { Config } from '../../config'
import type { EventHub } from '../events/hub'
import { randomBytes } from 'node:crypto'
import { addressHash, legacyAddressHash, maskAddress } from './address'
import { CONFIRM_TTL_MS, DAY_MS, HOUR_MS, confirmationAllowed } from './confirm-policy'
import { confirmMessage, resolvedMessage } from './message'
import { type BusyKeys, type ConfirmationRow, type MailRepo, type OutboxRow, type SettledState } from './repo'
import { MailError, SEND_DEADLINE_MS, sendMail } from './transport'
import { confirmToken, mailKeys, unsubscribeToken } from './unsubscribe-token'
import { isSanitized } from '../../sanitize/servable'
import { titleOf } from '../trackers/draft'
import { failureLog, type FailureLog } from '../../db/outage-log'

export interface MailerOptions {
  /** Cluster mode: true while this node holds the `dispatch` role; nothing is claimed or sent without it. */
  mayAct: () => boolean
  /** Where unsubscribe links point: FIXLOOP_PUBLIC_URL; unset, the listening address (server.ts, `listeningAt`). */
  publicUrl: string | undefined
  pollMs: number
}

/** Backoff after the n-th failed attempt: 30 s, 1 min, 2 min, … capped at 1 h; given up after MAX_ATTEMPTS (about a day). */
export const MAX_ATTEMPTS = 12
const RETRY_BASE_MS = 30_000
const RETRY_CAP_MS = 3_600_000
export const retryDelayMs = (attempts: number) => Math.min(RETRY_CAP_MS, RETRY_BASE_MS * 2 ** Math.max(0, attempts - 1))
/** A claim outlives the slowest attempt (the send deadline) with room to spare. */
const LEASE_MS = 120_000
const BATCH = 20
/** What a row's lease must still hold, beyond an attempt's deadline, for the row to be started. */
const LEASE_MARGIN_MS = 15_000
/** Apps whose mail is sent side by side (each App's one after another). */
export const APPS_AT_ONCE = 8
/**
 * Lanes one Org's Apps may hold at once: half, as the webhooks' share (8 of 16), so an Org whose servers are
 * slow or dead leaves the other half to every other Org, and an Org alone has the 4 lanes it always had.
 */
export const ORG_LANES = 4
/** Events wake the mailer at most this often (a burst of submissions is thousands of events). */
const WAKE_GAP_MS = 250

/** How one kind of claimed row (a resolution mail, a confirmation) is queued, sent and given back. */
interface RowKind<R> {
  /** What a row holds while claimed: its App, a confirmation's address too (held rows go one after another). */
  keysOf: (row: R) => string[]
  appOf: (row: R) => string
  orgOf: (row: R) => string
  /** 'server_failed': the App's SMTP server failed the attempt (retried on the backoff). */
  deliver: (row: R) => Promise<Delivery>
  /** Gives back claimed rows never started, due again at `notBefore` at the earliest (0: at once). */
  release: (rows: R[], notBefore?: number) => Promise<void>
}

type Delivery = 'done' | 'server_failed'

/** What this service is given: the repositories and values it uses (a Context has them all). */
export interface MailerDeps {
  store: Pick<Store, 'mail'>
  box: SecretBox
  clock: Clock
  urlSigningKey: Uint8Array
  config: Pick<Config, 'smtpAllowPrivate'>
}

export class Mailer {
  private readonly repo: MailRepo
  private readonly keys: ReturnType<typeof mailKeys>
  private readonly opts: MailerOptions
  private timer: ReturnType<typeof setInterval> | undefined
  private unsubscribe: (() => void) | undefined
  private running: Promise<void> | undefined
  private again = false
  /** A pass failing because the database is away is logged once per 30 s, not every pass (db/outage-log.ts). */
  private readonly failed: FailureLog

  constructor(
    private readonly ctx: MailerDeps,
    private readonly log: Logger,
    opts: Partial<MailerOptions>,
  ) {
    this.repo = ctx.store.mail
    this.failed = failureLog(log)
    this.keys = mailKeys(ctx.urlSigningKey)
    this.opts = { mayAct: () => true, pollMs: 5000, publicUrl: undefined, ...opts }
  }

  private listenUrl = 'http://127.0.0.1'

  /** The server's own address, for unsubscribe links when no public URL is configured. */
  listeningAt(url: string): void {
    this.listenUrl = url
  }

  start(hub: EventHub): void {
    if (this.timer) return
    this.stopped = false
    // An event may be a move to resolved: look (cheap: a partial index holds only opted-in resolved
    // reports), at most every WAKE_GAP_MS however many events a burst of submissions commits.
    this.unsubscribe = hub.subscribeAll(() => this.soon())
    this.timer = setInterval(() => void this.wake(), this.opts.pollMs)
    void this.wake()
  }

  private pending: ReturnType<typeof setTimeout> | undefined

  private soon(): void {
    if (this.pending) return
    this.pending = setTimeout(() => {
      this.pending = undefined
      void this.wake()
    }, WAKE_GAP_MS)
  }

  async stop(): Promise<void> {
    clearTimeout(this.pending)
    this.pending = undefined
    clearInterval(this.timer)
    this.timer = undefined
    this.unsubscribe?.()
    this.unsubscribe = undefined
    this.stopped = true
    await this.running
    await Promise.all(this.lanes)
  }

  /** Set by stop(): an ending lane no longer starts a pass. */
  private stopped = false

  /** Started and not stopped since: the passes run (a role change stops and starts the mailer again). */
  isStarted(): boolean {
    return this.timer !== undefined && !this.stopped
  }

  /**
   * Runs a pass now (or once more after the current one); resolves when the passes are done and every
   * lane they started has ended. While lanes run, a wake (an event, the timer, a lane that ended) runs
   * another pass at once: a slow App's lane never holds the claims of the others.
   */
  wake(): Promise<void> {
    if (this.running) {
      this.again = true
      this.nudge?.()
      return this.running
    }
    this.running = (async () => {
      try {
        do {
          this.again = false
          await this.pass()
          while (!this.again && this.lanes.size > 0) await this.laneEndedOrWoken()
        } while (this.again)
      } catch (e) {
        this.failed('warn', 'mailer pass failed', e)
      } finally {
        this.running = undefined
      }
    })()
    return this.running
  }

  private nudge: (() => void) | undefined

  private laneEndedOrWoken(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.nudge = resolve
      void Promise.race(this.lanes).then(resolve)
    }).finally(() => (this.nudge = undefined))
  }

  /** A reporter's sealed address, or null when this master key does not open it (a value from elsewhere; never logged). */
  private openAddress(sealed: string): string | null {
    try {
      return this.ctx.box.open(sealed).toString()
    } catch {
      return null
    }
  }

  /**
   * One bounded pass: ask for confirmations, queue what became due, then claim what is due and hand it to
   * lanes, which go on after the pass returns (wake() waits for them).
   */
  private async pass(): Promise<void> {
    // Stopped: a wake that came just before the stop claims nothing (its rows would sit leased for 2 minutes).
    if (this.stopped || !this.opts.mayAct()) return
    await this.askConfirmations()
    for (let round = 0; round < 50; round++) {
      const due = await this.repo.dueReports(BATCH)
      for (const r of due) {
        // Unreadable: queued and given up at once, so the report leaves the due index instead of being read
        // again on every pass.
        const address = this.openAddress(r.notify_email_sealed)
        const now = this.ctx.clock.now()
        await this.repo.enqueue({
          feedbackId: r.id,
          orgId: r.org_id,
          appId: r.app_id,
          emailSealed: r.notify_email_sealed,
          emailHash: address === null ? 'unreadable' : addressHash(this.keys.addressHashKey, address),
          emailMasked: address === null ? '***' : maskAddress(address),
          // Matched on the hash of the normalized address: one mail per address for the lead's resolution.
          leadId: address === null ? null : r.lead_id,
          // An address an anonymous submitter typed is mailed only once its owner confirmed it.
          needsConfirm: r.submitted_mode !== 'private',
          waitUntil: now + CONFIRM_TTL_MS,
          now,
        })
        if (address === null) await this.repo.settle(r.id, 'failed', 'the address does not open with the master key', now)
      }
      if (due.length < BATCH) break
    }
    for (let round = 0; round < 50 && this.opts.mayAct() && this.hasRoom(); round++) {
      const claimedAt = this.ctx.clock.now()
      const claimed = await this.repo.claimConfirmations(claimedAt, LEASE_MS, BATCH, this.busyKeys())
      await this.send(claimed, claimedAt, {
        keysOf: (row) => [`app:${row.app_id}`, `address:${row.email_hash}`],
        appOf: (row) => row.app_id,
        orgOf: (row) => row.org_id,
        deliver: (row) => this.deliverConfirmation(row),
        release: (rows, notBefore) => this.repo.releaseConfirmationClaims(rows.map((r) => ({ id: r.id, leaseUntil: Number(r.lease_until) })), notBefore),
      })
      if (claimed.length < BATCH) break
    }
    for (let round = 0; round < 50 && this.opts.mayAct() && this.hasRoom(); round++) {
      const claimedAt = this.ctx.clock.now()
      const claimed = await this.repo.claim(claimedAt, LEASE_MS, BATCH, this.busyKeys())
      await this.send(claimed, claimedAt, {
        keysOf: (row) => [`app:${row.app_id}`],
        appOf: (row) => row.app_id,
        orgOf: (row) => row.org_id,
        deliver: (row) => this.deliver(row),
        release: (rows, notBefore) => this.repo.releaseClaims(rows.map((r) => ({ id: r.feedback_id, leaseUntil: Number(r.lease_until) })), notBefore),
      })
      if (claimed.length < BATCH) break
    }
  }

  /** Claimed rows waiting for a lane, one queue per set of rows sharing a key. */
  private readonly waiting: Array<() => Promise<void>> = []
  /** The lanes sending now (at most APPS_AT_ONCE); each takes waiting queues until none is left. */
  private readonly lanes = new Set<Promise<void>>()
  /** Keys ("app:<id>", "address:<hash>") of every claimed row not finished yet, with how many rows hold each. */
  private readonly held = new Map<string, number>()
  /** Queues claimed and not finished (waiting or in a lane), per Org: at most ORG_LANES each. */
  private readonly orgQueues = new Map<string, number>()
  /**
   * Apps whose SMTP server failed an attempt, until when their other mail waits (the first backoff). Kept
   * by the mailer, not by the queue that saw the failure: the App's rows claimed by a later pass (asked a
   * moment after, or not yet due on the database's clock when the failing one was claimed) were tried
   * against the same server as soon as the failing queue ended (a PostgreSQL CI run).
   */
  private readonly failedUntil = new Map<string, number>()

  private serverFailedRecently(appId: string): boolean {
    const until = this.failedUntil.get(appId)
    if (until === undefined) return false
    if (until > this.ctx.clock.now()) return true
    this.failedUntil.delete(appId)
    return false
  }

  /** Claim only while a lane is free and nothing claimed waits: a claim is a lease, and idle leases only delay. */
  private hasRoom(): boolean {
    return this.lanes.size < APPS_AT_ONCE && this.waiting.length === 0
  }

  /**
   * What the next claim must leave: Apps and addresses this node still holds rows of (so they stay one after
   * another), and Orgs that use their share of the lanes.
   */
  private busyKeys(): BusyKeys {
    const apps: string[] = []
    const addresses: string[] = []
    for (const key of this.held.keys()) {
      if (key.startsWith('app:')) apps.push(key.slice(4))
      else if (key.startsWith('address:')) addresses.push(key.slice(8))
    }
    const orgs = [...this.orgQueues].filter(([, n]) => n >= ORG_LANES).map(([org]) => org)
    return { apps, addresses, orgs }
  }

  /**
   * Sends claimed rows: unrelated rows side by side (at most APPS_AT_ONCE lanes), rows sharing a key (their
   * App; a confirmation's address too, whose limits count what was sent before) one after another, so one
   * App's slow SMTP server holds its own mail and not every App's (an audit's server held the instance's
   * serial mailer for minutes). The lanes outlive the pass that claimed the rows: the next pass claims and
   * sends other Apps' mail beside a lane still waiting on a slow server, and leaves the held Apps' rows (the
   * keys of claimed rows are held until they end). A row is started only while its lease outlasts an attempt
   * (the send deadline and a margin); the rows not started are given back (their lease released, the claim
   * not counted as an attempt) and claimed again at once (by this node or the next holder of the role),
   * never sent twice. An Org's queues beyond its share (ORG_LANES, one claim can bring more) are given back
   * at once, and the next claims leave that Org's rows until one of its queues ends: one Org's slow or dead
   * servers never hold every lane.
   */
  private async send<R extends { attempts: number }>(rows: R[], claimedAt: number, kind: RowKind<R>): Promise<void> {
    const leaseLeftForAnAttempt = () => this.ctx.clock.now() - claimedAt <= LEASE_MS - SEND_DEADLINE_MS - LEASE_MARGIN_MS
    const beyondShare: R[] = []
    for (const queue of queuesSharingKeys(rows, kind.keysOf)) {
      // A queue of rows of two Orgs (a confirmation's address shared across them) counts for its first row's.
      const org = kind.orgOf(queue[0])
      const orgQueues = this.orgQueues.get(org) ?? 0
      if (orgQueues >= ORG_LANES) {
        beyondShare.push(...queue)
        continue
      }
      this.orgQueues.set(org, orgQueues + 1)
      const keys = [...new Set(queue.flatMap(kind.keysOf))]
      for (const key of keys) this.held.set(key, (this.held.get(key) ?? 0) + 1)
      this.waiting.push(async () => {
        // Apps whose server failed an attempt (this queue's or another's, within the first backoff): their
        // other rows wait for that backoff (not counted as attempts) instead of each holding this lane for
        // another timeout, so a few Apps with dead servers do not keep every lane busy.
        const deferred: R[] = []
        try {
          for (const [i, row] of queue.entries()) {
            // Stopped (a shutdown, the role lost), without the role, or its lease too short: the rest is given
            // back. A stop waits for the attempt in hand only. (Given back failing, the leases run out instead.)
            if (this.stopped || !this.opts.mayAct() || !leaseLeftForAnAttempt()) return await kind.release(queue.slice(i))
            // A row retried on its own backoff (attempts counts this claim) is due by its own schedule.
            if (row.attempts <= 1 && this.serverFailedRecently(kind.appOf(row))) deferred.push(row)
            else if ((await kind.deliver(row)) === 'server_failed') this.failedUntil.set(kind.appOf(row), this.ctx.clock.now() + RETRY_BASE_MS)
          }
        } finally {
          if (deferred.length > 0) await kind.release(deferred, this.ctx.clock.now() + RETRY_BASE_MS)
          for (const key of keys) {
            const n = (this.held.get(key) ?? 1) - 1
            if (n > 0) this.held.set(key, n)
            else this.held.delete(key)
          }
          const n = (this.orgQueues.get(org) ?? 1) - 1
          if (n > 0) this.orgQueues.set(org, n)
          else this.orgQueues.delete(org)
        }
      })
    }
    while (this.lanes.size < APPS_AT_ONCE && this.waiting.length > 0) this.openLane()
    // Given back as never started (no attempt counted): claimed again when one of the Org's queues ends.
    if (beyondShare.length > 0) await kind.release(beyondShare)
  }

  private openLane(): void {
    const lane: Promise<void> = (async () => {
      for (let queue = this.waiting.shift(); queue; queue = this.waiting.shift()) {
        try {
          await queue()
        } catch (e) {
          this.failed('warn', 'mailer lane failed', e)
        }
      }
    })().finally(() => {
      this.lanes.delete(lane)
      // A queue handed over while this lane was ending (after its last look at `waiting`) gets a lane now:
      // nothing else would run it, and while it waits no pass claims anything (hasRoom).
      while (this.lanes.size < APPS_AT_ONCE && this.waiting.length > 0) this.openLane()
      // A lane freed: claim what the held keys kept out, and what waited for room (not once stopped).
      if (!this.stopped) void this.wake()
    })
    this.lanes.add(lane)
  }

  /**
   * Public-mode opt-ins not asked yet: each address gets its confirmation (one per App and normalized
   * address; asked again only after the earlier one ended or expired). The report is marked asked either way.
   */
  private async askConfirmations(): Promise<void> {
    for (let round = 0; round < 50; round++) {
      const due = await this.repo.dueAsks(BATCH)
      for (const r of due) {
        // Unreadable: nothing to ask; the report's mail is given up when it is queued.
        const address = this.openAddress(r.notify_email_sealed)
        const now = this.ctx.clock.now()
        await this.repo.ask({
          feedbackId: r.id,
          appId: r.app_id,
          orgId: r.org_id,
          emailHash: address === null ? 'unreadable' : addressHash(this.keys.addressHashKey, address),
          // Kept as given: the mail goes where the submitter typed; only the counting is normalized.
          emailSealed: address === null ? r.notify_email_sealed : this.ctx.box.seal(Buffer.from(address)),
          nonce: randomBytes(16).toString('hex'),
          now,
          reaskBefore: now - CONFIRM_TTL_MS,
        })
      }
      if (due.length < BATCH) break
    }
  }

  private base(): string {
    return this.opts.publicUrl ?? this.listenUrl
  }

  private unsubscribeUrl(appId: string, emailHash: string): string {
    return `${this.base()}/v1/mail/unsubscribe?token=${unsubscribeToken(this.keys.unsubscribeKey, appId, emailHash)}`
  }

  /** One confirmation mail: the rate limits first, then the App's SMTP server; nothing the submitter wrote. */
  private async deliverConfirmation(row: ConfirmationRow): Promise<Delivery> {
    const now = () => this.ctx.clock.now()
    const end = async (state: 'failed' | 'limited' | 'no_smtp' | 'unsubscribed', why: string | null): Promise<Delivery> => {
      await this.repo.settleConfirmation(row.id, state, why, now())
      return 'done'
    }
    if (!row.email_sealed || !row.nonce) return end('failed', 'no address')
    let to: string
    try {
      to = this.ctx.box.open(row.email_sealed).toString()
    } catch {
      return end('failed', 'the address does not open with the master key')
    }
    if (await this.repo.isUnsubscribed(row.app_id, [row.email_hash, legacyAddressHash(this.keys.addressHashKey, to)])) return end('unsubscribed', null)
    const smtp = await this.repo.smtp(row.app_id)
    if (!smtp) return end('no_smtp', 'the App has no SMTP settings')
    const sent = await this.repo.confirmationsSent(row.app_id, row.email_hash, now() - HOUR_MS, now() - DAY_MS)
    const allowed = confirmationAllowed(sent.byApp, sent.toAddress)
    if (allowed !== 'ok') {
      this.log.info('confirmation mail not sent: rate limit', { appId: row.app_id, limit: allowed })
      return end('limited', allowed === 'app' ? 'the App sent its confirmation mails for this hour' : 'the address got its confirmation mails for today')
    }
    try {
      const msg = confirmMessage({
        appName: (await this.repo.appName(row.app_id)) ?? 'fixloop',
        confirmUrl: `${this.base()}/v1/mail/confirm?token=${confirmToken(this.keys.confirmKey, row.app_id, row.email_hash, row.nonce)}`,
        days: Math.round(CONFIRM_TTL_MS / DAY_MS),
        unsubscribeUrl: this.unsubscribeUrl(row.app_id, row.email_hash),
      })
      await sendMail(this.ctx.box, smtp, { to, ...msg }, { allowPrivate: this.ctx.config.smtpAllowPrivate })
      await this.repo.confirmationSent(row.id, now())
      return 'done'
    } catch (e) {
      const reason = e instanceof Error ? e.message.slice(0, 300) : String(e)
      const permanent = e instanceof MailError && e.permanent
      // Fewer tries than a report's mail: a confirmation is only useful while the reporter remembers asking.
      if (permanent || row.attempts >= 6) await end('failed', reason)
      else await this.repo.retryConfirmation(row.id, now() + retryDelayMs(row.attempts), reason)
      return permanent ? 'done' : 'server_failed'
    }
  }

  private async deliver(row: OutboxRow): Promise<Delivery> {
    const now = () => this.ctx.clock.now()
    const end = async (state: SettledState, why: string | null): Promise<Delivery> => {
      await this.repo.settle(row.feedback_id, state, why, now())
      return 'done'
    }
    if (!row.email_sealed) return end('failed', 'no address')
    let to: string
    try {
      to = this.ctx.box.open(row.email_sealed).toString()
    } catch {
      return end('failed', 'the address does not open with the master key')
    }
    // An unsubscribe recorded before addresses were normalized names the lower-cased address's hash.
    if (await this.repo.isUnsubscribed(row.app_id, [row.email_hash, legacyAddressHash(this.keys.addressHashKey, to)])) return end('unsubscribed', null)
    // Due while unconfirmed: its wait for the confirmation ran out (a confirmation releases it earlier).
    if (row.needs_confirm && !(await this.repo.isConfirmed(row.app_id, row.email_hash))) return end('unconfirmed', 'the address was not confirmed')
    const smtp = await this.repo.smtp(row.app_id)
    if (!smtp) return end('no_smtp', 'the App has no SMTP settings')
    try {
      const facts = await this.repo.reportFacts(row.feedback_id)
      const msg = resolvedMessage({
        appName: (await this.repo.appName(row.app_id)) ?? 'fixloop',
        feedbackId: row.feedback_id,
        createdAt: facts?.created_at !== undefined ? Number(facts.created_at) : row.created_at,
        // Only a private-mode report's (sanitized) words are quoted: a public one's are a stranger's.
        quotable: facts && facts.submitted_mode === 'private' && isSanitized(facts) ? { text: facts.text, title: titleOf(facts) } : null,
        prUrl: await this.repo.latestPrUrl(row.feedback_id),
        unsubscribeUrl: this.unsubscribeUrl(row.app_id, row.email_hash),
        unsubscribeMailto: null,
      })
      await sendMail(this.ctx.box, smtp, { to, ...msg }, { allowPrivate: this.ctx.config.smtpAllowPrivate })
      return end('sent', null)
    } catch (e) {
      const reason = e instanceof Error ? e.message.slice(0, 300) : String(e)
      const permanent = e instanceof MailError && e.permanent
      if (permanent || row.attempts >= MAX_ATTEMPTS) {
        await this.repo.settle(row.feedback_id, 'failed', reason, now())
        this.log.warn('mail to a reporter given up', { feedbackId: row.feedback_id, attempts: row.attempts, error: reason })
      } else {
        await this.repo.retryLater(row.feedback_id, now() + retryDelayMs(row.attempts), reason)
        this.log.info('mail to a reporter failed; retried later', { feedbackId: row.feedback_id, attempts: row.attempts, error: reason })
      }
      return permanent ? 'done' : 'server_failed'
    }
  }
}

/**
 * Rows in queues: two rows sharing a key (transitively) are in one queue, in their order; rows sharing
 * none are in different queues.
 */
export function queuesSharingKeys<R>(rows: readonly R[], keysOf: (row: R) => string[]): R[][] {
  const parent = rows.map((_, i) => i)
  const root = (i: number): number => (parent[i] === i ? i : (parent[i] = root(parent[i])))
  const firstWithKey = new Map<string, number>()
  rows.forEach((row, i) => {
    for (const key of keysOf(row)) {
      const j = firstWithKey.get(key)
      if (j === undefined) firstWithKey.set(key, i)
      else parent[root(i)] = root(j)
    }
  })
  const byRoot = new Map<number, R[]>()
  rows.forEach((row, i) => (byRoot.get(root(i)) ?? byRoot.set(root(i), []).get(root(i))!).push(row))
  return [...byRoot.values()]
}
