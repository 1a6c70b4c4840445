/**
 * The push rules (docs/trackers.md "Rules"), read from the Org's events after each connection's cursor:
 * a lead whose cluster reaches `rules.minDuplicates` (feedback.duplicate_attached) and a lead entering
 * awaiting_manual with a chosen severity (feedback.status_changed) get a pending issue and a push job; a
 * lead that already has an issue gets a push job when its cluster changes (attached, unmerged). Links,
 * jobs and the cursor's move are one transaction (repo.queuePushes), compared-and-set on the cursor so two
 * nodes never both act on an event; it runs with the `dispatch` role, like the webhook and Slack
 * dispatchers. Never in the intake or lifecycle transaction: events are read after they committed.
 */
import type { Logger } from '../../core/logger'
import type { EventHub } from '../events/hub'
import type { LinkInit, TrackerConnectionRow, TrackersRepo } from './repo'
import { parseRules } from './service'
import { failureLog, type FailureLog } from '../../db/outage-log'

const PAGE = 200
const PAGES_PER_RUN = 20

export class TrackerRulesWatcher {
  private timer: ReturnType<typeof setInterval> | undefined
  private unsubscribe: (() => void) | undefined
  private readonly running = new Map<string, Promise<void>>()
  private readonly again = new Set<string>()

  constructor(
    private readonly repo: TrackersRepo,
    private readonly log: Logger,
    private readonly mayAct: () => boolean = () => true,
    private readonly everyMs = 5000,
  ) {
    this.failed = failureLog(log)
  }

  /** A pass failing because the database is away is logged once per 30 s, not every pass (db/outage-log.ts). */
  private readonly failed: FailureLog

  start(hub: EventHub): void {
    this.unsubscribe = hub.subscribeAll((orgId) => this.runOrg(orgId))
    this.timer = setInterval(() => void this.runAll(), this.everyMs)
    void this.runAll()
  }

  async stop(): Promise<void> {
    clearInterval(this.timer)
    this.unsubscribe?.()
    await Promise.allSettled([...this.running.values()])
  }

  async runAll(): Promise<void> {
    try {
      for (const orgId of await this.repo.connectedOrgs()) this.runOrg(orgId)
    } catch (e) {
      this.failed('warn', 'tracker rules failed', e)
    }
  }

  /** Resolves when every Org has caught up (tests). */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running.values()])
  }

  /** One run per Org at a time; events that arrive meanwhile start one more after it. */
  runOrg(orgId: string): void {
    if (this.running.has(orgId)) {
      this.again.add(orgId)
      return
    }
    const run = this.catchUp(orgId)
      .catch((e) => this.failed('warn', 'tracker rules failed', e, { orgId }))
      .finally(() => {
        this.running.delete(orgId)
        if (this.again.delete(orgId)) this.runOrg(orgId)
      })
    this.running.set(orgId, run)
  }

  private async catchUp(orgId: string): Promise<void> {
    for (const conn of await this.repo.connectionsOf(orgId)) {
      let cursor = conn.event_cursor
      for (let page = 0; page < PAGES_PER_RUN && this.mayAct(); page++) {
        const events = await this.repo.eventsAfter(orgId, conn.app_id, cursor, PAGE)
        if (events.length === 0) break
        const to = events[events.length - 1].seq
        const plan = await this.plan(conn, events)
        if (!(await this.repo.queuePushes(conn.app_id, { ...plan, cursor: { from: cursor, to } }))) break
        cursor = to
        if (events.length < PAGE) break
      }
    }
  }

  /** Which leads get an issue now (`create`) and which issues are refreshed, from one page of events. */
  private async plan(conn: TrackerConnectionRow, events: { type: string; data: string }[]): Promise<{ create: LinkInit[]; refresh: string[] }> {
    const rules = parseRules(conn.rules)
    const byCount = new Set<string>()
    const waiting = new Set<string>()
    const refresh = new Set<string>()
    for (const e of events) {
      let data: Record<string, unknown>
      try {
        data = JSON.parse(e.data) as Record<string, unknown>
      } catch {
        continue
      }
      const lead = typeof data.leadFeedbackId === 'string' ? data.leadFeedbackId : null
      if (e.type === 'feedback.duplicate_attached' && lead) {
        refresh.add(lead)
        if (rules.minDuplicates !== null && typeof data.duplicateCount === 'number' && data.duplicateCount >= rules.minDuplicates) byCount.add(lead)
      } else if (e.type === 'feedback.unmerged' && lead) {
        refresh.add(lead)
      } else if (e.type === 'feedback.status_changed' && data.to === 'awaiting_manual' && typeof data.feedbackId === 'string' && rules.onAwaitingManual.length > 0) {
        waiting.add(data.feedbackId)
      }
    }
    const wanted = new Set(rules.onAwaitingManual)
    const create = new Set<string>()
    for (const r of await this.repo.reportsOf([...new Set([...byCount, ...waiting])])) {
      if (r.duplicate_of_id !== null) continue
      if (byCount.has(r.id) || (waiting.has(r.id) && wanted.has((r.severity ?? 'unset') as never))) create.add(r.id)
    }
    return { create: [...create].map((feedbackId) => ({ feedbackId, orgId: conn.org_id, kind: conn.kind, project: conn.project })), refresh: [...refresh] }
  }
}
