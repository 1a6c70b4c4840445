/**
 * Webhook delivery. The outbox is the queue: for each live endpoint a cursor (webhooks.cursor_seq)
 * turns the Org's new events into delivery rows in one transaction, and due deliveries are claimed with
 * a lease, sent, and settled (attempt log + next step) in another. A kill -9 at any point loses nothing:
 * unsent rows stay pending, leases of a dead process are released at start, and a resend carries the
 * same webhook-id (the event id), so delivery is at-least-once and receivers can deduplicate.
 */
import type { Logger } from '../../core/logger'
import { failureLog, type FailureLog } from '../../db/outage-log'
import type { Store } from '../../db/store'
import type { SecretBox } from '../../core/crypto'
import type { Clock } from '../../core/clock'
import type { Config } from '../../config'
import { newId } from '../../core/ids'
import { createTurns } from '../../core/turns'
import { VERSION } from '../../version'
import type { EventHub } from '../events/hub'
import { type DeliveryRow, type WebhookRow, type WebhooksRepo } from './repo'
import { DISABLE_AFTER_FAILING_MS, parseRetryAfter, retryDelayMs } from './schedule'
import { postOnce, type AttemptResult } from './sender'
import { signatureHeader } from './signature'
import { checkTarget } from './ssrf'

export interface DispatcherOptions {
  /** Most attempts in flight at once over all endpoints. */
  concurrency: number
  /** How often due retries are looked for when nothing else wakes the dispatcher. */
  pollMs: number
  random: () => number
  /** Cluster mode: true while this node holds the `dispatch` role; no claim is made without it. */
  mayAct: () => boolean
}

const FANOUT_PAGE = 500

/**
 * How the pool's attempts are shared between Orgs. An attempt to an endpoint that hangs holds its slot for
 * the whole timeout, and a slot in flight cannot be taken back, so sharing is decided when rows are claimed:
 * - the Orgs with attempts in flight may together use all but `reserve` slots (a quarter of the pool);
 * - each Org at most its share: half of the pool while no other Org has attempts in flight, else
 *   `max(1, floor(pool / Orgs in flight))`;
 * - the reserve goes to Orgs with nothing in flight, one attempt each: an Org whose deliveries come while
 *   others hang gets a slot at once, whoever holds the rest.
 * With the share alone (half each), two Orgs whose receivers hang took all 16 attempts for their timeout;
 * a third Org's delivery waited for it. Now two hanging Orgs hold 8 + 4, and the next four Orgs each get
 * an attempt at once.
 */
export function poolShares(pool: number): { reserve: number; share: (orgsInFlight: number) => number } {
  const reserve = Math.floor(pool / 4)
  return { reserve, share: (orgs) => Math.max(1, Math.floor(orgs <= 1 ? pool / 2 : pool / orgs)) }
}

/** What this service is given: the repositories and values it uses (a Context has them all). */
export interface DispatcherDeps {
  store: Pick<Store, 'webhooks'>
  box: SecretBox
  clock: Clock
  config: Pick<Config, 'webhookAllowPrivate' | 'webhookRetryScale' | 'webhookTimeoutMs'>
}

/** The endpoints grouped by Org, in the order met (`behind` returns them sorted by Org). */
function byOrg(endpoints: WebhookRow[]): Map<string, WebhookRow[]> {
  const groups = new Map<string, WebhookRow[]>()
  for (const w of endpoints) {
    const group = groups.get(w.org_id)
    if (group) group.push(w)
    else groups.set(w.org_id, [w])
  }
  return groups
}

export class WebhookDispatcher {
  private readonly repo: WebhooksRepo
  private readonly inFlight = new Map<string, Promise<void>>()
  private timer: ReturnType<typeof setInterval> | undefined
  private unsubscribe: (() => void) | undefined
  private stopped = false
  private readonly opts: DispatcherOptions

  /** Failures of the loop: the database being away logged once per window, not every pass. */
  private readonly failed: FailureLog

  constructor(
    private readonly ctx: DispatcherDeps,
    private readonly log: Logger,
    opts: Partial<DispatcherOptions> = {},
  ) {
    this.repo = ctx.store.webhooks
    this.failed = failureLog(log)
    this.opts = { concurrency: 16, pollMs: 200, random: Math.random, mayAct: () => true, ...opts }
  }

  /** Starts delivering: releases leases a killed process left, catches up every Org, then follows the hub. */
  start(hub: EventHub): void {
    // Cluster mode starts it again when this node takes the `dispatch` role back (src/nodes/coordinator.ts).
    this.stopped = false
    // Released before anything is claimed (on SQLite the statement runs at this call).
    const released = this.repo.releaseLeases()
    this.unsubscribe = hub.subscribeAll((orgId) => {
      // Called from the hub's timer: an error here (SQLITE_BUSY under a write burst) must not end the
      // process. The next tick fans out every Org again, so nothing is lost.
      void (async () => {
        await this.fanOut(orgId)
        await this.sendDue()
      })().catch((e) => this.failed('error', 'webhook dispatch failed', e))
    })
    this.timer = setInterval(() => void this.tick(), this.opts.pollMs)
    void released.then(
      () => this.tick(),
      (e) => this.log.error('webhook leases not released', { error: e instanceof Error ? e.message : String(e) }),
    )
  }

  async stop(): Promise<void> {
    this.stopped = true
    clearInterval(this.timer)
    this.unsubscribe?.()
    // A claim under way may still start attempts: wait for it, then for every attempt.
    await this.claimRun?.catch(() => {})
    await this.idle()
  }

  /**
   * One full pass: fan out every endpoint that is behind, an Org at a time, then send what is due. Tests
   * call it directly. One read finds the endpoints behind (5 passes a second: reading every endpoint, or
   * asking per endpoint, made an idle pass cost every endpoint of every Org).
   */
  async tick(): Promise<void> {
    try {
      for (const [orgId, endpoints] of byOrg(await this.repo.behind())) await this.inTurn(() => this.fanOutEndpoints(orgId, endpoints))
      await this.sendDue()
    } catch (e) {
      this.failed('error', 'webhook dispatch failed', e)
    }
    await this.idle()
  }

  /**
   * Resolves when no attempt is in flight and no claim is under way (tests, stop). An attempt that ends
   * claims the endpoint's next delivery (one in flight per endpoint): on PostgreSQL that claim is a round
   * trip, so waiting for the attempts alone could return between two deliveries of a backlog.
   */
  async idle(): Promise<void> {
    for (;;) {
      if (this.claiming && this.claimRun) await this.claimRun.catch(() => {})
      else if (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight.values()])
      else return
    }
  }

  private readonly matches = (w: WebhookRow, e: { type: string; app_id: string | null; data: string }): boolean => {
    if (e.type === 'webhook.test' || e.type === 'webhook.disabled') {
      const target = (JSON.parse(e.data) as { webhookId?: string }).webhookId
      // A test goes to its endpoint only; a disabled endpoint hears of itself only through the others.
      if (e.type === 'webhook.test') return target === w.id
      if (target === w.id) return false
    }
    if (w.app_id !== null && e.app_id !== w.app_id) return false
    const types = JSON.parse(w.event_types) as string[]
    return types.length === 0 || types.includes(e.type)
  }

  /**
   * Fan-outs and claims of this process take turns. On PostgreSQL a fan-out locks the endpoint's row and a
   * claim skips endpoints whose row is locked (SKIP LOCKED, so nodes never wait on each other): a claim
   * overlapping this process's own fan-out (the poll timer's, a wake's) would pass over a delivery that
   * is due, and leave it for the next pass.
   */
  private readonly inTurn = createTurns()

  /** Turns the Org's events past each endpoint's cursor into delivery rows. */
  fanOut(orgId: string): Promise<void> {
    // A read first: only endpoints behind take the write lock (most wakes find nothing new for most).
    return this.inTurn(async () => this.fanOutEndpoints(orgId, await this.repo.behindInOrg(orgId)))
  }

  /** Fans out each of the Org's `endpoints` (read as behind; each page re-reads its cursor in its transaction). */
  private async fanOutEndpoints(orgId: string, endpoints: WebhookRow[]): Promise<void> {
    for (const w of endpoints) {
      for (;;) {
        const moved = await this.repo.fanOutPage(orgId, w.id, FANOUT_PAGE, this.matches, () => newId(this.ctx.clock), this.ctx.clock.now())
        if (moved < FANOUT_PAGE) break
      }
    }
  }

  /** Claims due deliveries up to the concurrency limit and sends them. */
  async sendDue(): Promise<void> {
    if (this.stopped) return
    // One claim at a time in this process: two overlapping claims would both count the same free room.
    if (this.claiming) {
      this.claimAgain = true
      // Resolve only once that run has claimed again: a caller (tick) waits for what is due to be in flight.
      // On PostgreSQL a claim is a round trip, so the background timer's claim is often under way here.
      await this.claimRun
      return
    }
    this.claiming = true
    const run = async () => {
      try {
        do {
          this.claimAgain = false
          await this.claimAndSend()
        } while (this.claimAgain && !this.stopped)
      } finally {
        this.claiming = false
      }
    }
    this.claimRun = run()
    await this.claimRun
  }

  private claiming = false
  private claimAgain = false
  private claimRun: Promise<void> | undefined

  /**
   * Claims due deliveries up to the free room and starts them, shared between Orgs as `poolShares` says.
   * Outside the reserve, the Orgs at their share are left out of the claim, and a claim takes no more rows
   * than the Org closest to its share may still have (a claim's rows may all be one Org's, an Org with
   * nothing in flight included). In the reserve, every Org in flight is left out and a claim takes one row:
   * one attempt for one Org with nothing in flight. Claims again while rows came and room is left: one
   * claim a pass when little is due (an attempt that ends, while a backlog drains).
   */
  private async claimAndSend(): Promise<void> {
    const { reserve, share } = poolShares(this.opts.concurrency)
    for (;;) {
      if (this.inFlight.size >= this.opts.concurrency || !this.opts.mayAct() || this.stopped) return
      const counts = this.inFlightByOrg()
      const perOrg = share(counts.size)
      const room = this.opts.concurrency - reserve - this.inFlight.size
      let limit = 1
      let full = [...counts.keys()]
      if (room > 0) {
        full = [...counts].filter(([, n]) => n >= perOrg).map(([orgId]) => orgId)
        const busiest = Math.max(0, ...[...counts.values()].filter((n) => n < perOrg))
        limit = Math.min(room, perOrg - busiest)
      }
      const claimed = await this.claimRows(limit, full)
      if (claimed.length < limit) return
    }
  }

  /** Leases up to `limit` due rows of Orgs not in `full` and starts their attempts. */
  private async claimRows(limit: number, full: string[]): Promise<DeliveryRow[]> {
    const now = this.ctx.clock.now()
    // The lease outlives the timeout, so a live attempt is never claimed twice.
    const claimed = await this.inTurn(() => this.repo.claim(now, now + this.ctx.config.webhookTimeoutMs + 60_000, limit, [...this.inFlight.keys()], full))
    for (const d of claimed) {
      const p = this.attempt(d)
        .catch((e) => this.log.error('webhook attempt failed', { deliveryId: d.id, error: e instanceof Error ? e.message : String(e) }))
        .finally(() => {
          this.inFlight.delete(d.id)
          this.inFlightOrg.delete(d.id)
          this.sendDue().catch((e) => this.failed('error', 'webhook dispatch failed', e))
        })
      this.inFlight.set(d.id, p)
      this.inFlightOrg.set(d.id, d.org_id)
    }
    return claimed
  }

  /** Attempts in flight per Org. */
  private inFlightByOrg(): Map<string, number> {
    const counts = new Map<string, number>()
    for (const orgId of this.inFlightOrg.values()) counts.set(orgId, (counts.get(orgId) ?? 0) + 1)
    return counts
  }

  /** The Org of each attempt in flight (its share of the pool, `poolShares`). */
  private readonly inFlightOrg = new Map<string, string>()

  private secretsOf(w: WebhookRow, now: number): string[] {
    const secrets = [this.ctx.box.open(w.secret_sealed).toString()]
    if (w.previous_secret_sealed && (w.previous_secret_until ?? 0) > now) secrets.push(this.ctx.box.open(w.previous_secret_sealed).toString())
    return secrets
  }

  private async attempt(d: DeliveryRow): Promise<void> {
    const w = await this.repo.getAny(d.webhook_id)
    if (!w || !w.enabled) return
    const now = this.ctx.clock.now()
    const timestamp = Math.floor(now / 1000)
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': `fixloop-webhooks/${VERSION}`,
      'webhook-id': d.event_id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader(this.secretsOf(w, now), d.event_id, timestamp, d.payload),
    }
    let result: AttemptResult
    try {
      // Checked again before every attempt: DNS may have changed since the endpoint was created.
      const target = await checkTarget(w.url, this.ctx.config.webhookAllowPrivate)
      result = await postOnce(target, headers, d.payload, this.ctx.config.webhookTimeoutMs)
    } catch (e) {
      const reason = (e as { details?: { reason?: string } }).details?.reason ?? (e instanceof Error ? e.message : String(e))
      result = { status: null, headers: {}, body: null, error: `target refused: ${reason}`, latencyMs: 0 }
    }
    await this.settle(d, w, headers, result)
  }

  private async settle(d: DeliveryRow, w: WebhookRow, headers: Record<string, string>, r: AttemptResult): Promise<void> {
    const now = this.ctx.clock.now()
    const ok = r.status !== null && r.status >= 200 && r.status < 300
    const retryAfter = ok ? undefined : parseRetryAfter(r.headers['retry-after'], now)
    const done = await this.repo.settle({
      attempt: {
        id: newId(this.ctx.clock),
        delivery_id: d.id,
        webhook_id: w.id,
        org_id: w.org_id,
        attempt: d.attempts + 1,
        request_headers: JSON.stringify(headers),
        request_body: d.payload,
        response_status: r.status,
        response_body: r.body,
        error: r.error,
        latency_ms: r.latencyMs,
        created_at: now,
      },
      delivery: d,
      webhook: w,
      kind: ok ? 'succeeded' : r.status === 410 ? 'gone' : 'failed',
      lastStatus: r.status,
      now,
      retryDelay: () => retryDelayMs(d.schedule_index, this.ctx.config.webhookRetryScale, this.opts.random, retryAfter),
      disableAfterMs: DISABLE_AFTER_FAILING_MS * this.ctx.config.webhookRetryScale,
    })
    if (!done.settled) this.log.warn('webhook attempt already settled elsewhere', { deliveryId: d.id })
    if (done.disabled) this.log.warn('webhook endpoint disabled', { webhookId: w.id, reason: done.disabled })
  }
}
