/**
 * The work of the tracker jobs (docs/trackers.md "Push", "Pull", "Failures"), outside any transaction:
 *
 * - `pushLead`: creates the lead's issue, or replaces its text and comments when the cluster grew
 *   (draft.ts: at most one comment an hour unless the cluster doubled). A TrackerError marks the link
 *   failing with the tracker's answer and the connection's health, and asks to run again after the
 *   tracker's Retry-After or an exponential backoff (30 s doubling to an hour), whichever is longer. An
 *   issue gone on the tracker (not_found on an issue fixloop created) marks the link deleted: no more
 *   syncing, nothing moves.
 * - `pollPass`: reads the state of up to POLL_BATCH live issues and applies it like a webhook delivery
 *   (no echo there: fixloop never changes an issue's state); a lead whose cluster size differs from what
 *   was pushed is queued again (the fallback for a growth the push job missed). The pass walks every
 *   App's issues, and every tracker is the choice of its App's Org: one App's tracker that fails or
 *   throttles costs that App its turn, never the other Apps theirs (see pollPass).
 */
import type { Clock } from '../../core/clock'
import type { Logger } from '../../core/logger'
import { callDeadlineMs, TrackerError, type TrackedIssue, type TrackerKind } from '../../trackers/adapter'
import { adapterFor } from '../../trackers/registry'
import { isSanitized } from '../../sanitize/servable'
import { commentDue, draftOf, growthComment } from './draft'
import { actionFor } from './mapping'
import { linkFollows, type TrackerConnectionRow } from './repo'
import { parseStateMap, type TrackersService } from './service'
import { createAppTimeShare, DEFAULT_CALL_SHARE, type CallShare } from '../../core/time-share'
import { OutOfJobTime, UNBOUNDED, type JobBudget } from '../../core/job-budget'

export const PUSH_BACKOFF_BASE_MS = 30_000
export const PUSH_BACKOFF_MAX_MS = 3600_000
export const POLL_BATCH = 50
/** A push re-reads the cluster after it wrote and goes again this many times at most. */
const PUSH_ROUNDS = 3
/**
 * The calls a create round is checked for before it starts: Jira's create and its retry as another issue
 * type, or Linear's and Gitea's label lookup and the create (Jira's read-back after them is optional).
 */
const CREATE_CALLS = 2
/** A push that stopped short of its job's end runs again this soon, with a fresh lease. */
export const PUSH_CONTINUES_MS = 1_000

export const pushBackoffMs = (attempts: number) => Math.min(PUSH_BACKOFF_MAX_MS, PUSH_BACKOFF_BASE_MS * 2 ** Math.max(0, attempts - 1))

/** What a push asks of its job: done, or run again in `retryInMs` (a failure, or a lead not sanitized yet). */
export type PushOutcome = { done: true } | { done: false; retryInMs: number; reason: string }

const NOT_SANITIZED = new Set(['received', 'sanitizing'])

export function createTrackerSync(deps: { trackers: TrackersService; clock: Clock; log: Logger; publicUrl: string | undefined; share?: CallShare }) {
  const { trackers, clock, log } = deps
  const share = deps.share ?? DEFAULT_CALL_SHARE
  const repo = trackers.repo
  /**
   * Issues created at the tracker whose link could not be saved (the database away right then: a full
   * disk, a read-only remount), by lead, with the cluster size they were written for. The job runs again
   * (it waits for the database without spending an attempt) and links this issue instead of creating
   * another: without it, every try of an outage made one more issue. Kept by this process only.
   */
  const unsaved = new Map<string, { issue: TrackedIssue; size: number }>()
  /** Each App's share of the worker's tracker time, within its Org's (core/time-share.ts): a slow tracker delays its own Org's work only. */
  const budget = createAppTimeShare(() => clock.now(), share.appBudgetMs, share.orgBudgetMs, share.windowMs)

  async function healthy(conn: TrackerConnectionRow): Promise<void> {
    if (conn.last_error !== null) await repo.setHealth(conn.app_id, { error: null, at: null, retryAt: null })
  }

  /**
   * `time`: the job's (core/job-budget.ts). A round starts only when its calls fit in it at their whole
   * deadlines, and each call is checked again as it starts (the adapters' HTTP clients: OutOfJobTime); when
   * they do not, the push stops there and its job runs again in PUSH_CONTINUES_MS, with a fresh lease. Run
   * past its lease, another worker (another node) could claim the same push and create a second issue.
   */
  async function pushLead(feedbackId: string, time: JobBudget = UNBOUNDED): Promise<PushOutcome> {
    for (let round = 0; round < PUSH_ROUNDS; round++) {
      const link = await repo.issue(feedbackId)
      if (!link || link.sync_state === 'deleted') return { done: true }
      const conn = await repo.connection(link.app_id)
      // Disconnected (or connected to another kind or project since): the link stays readable, nothing is synced.
      if (!conn || !linkFollows(conn, link)) return { done: true }
      const lead = await repo.lead(feedbackId)
      // Merged into another lead since: it follows that lead's issue; its own is left as it was.
      if (!lead || lead.duplicate_of_id !== null) return { done: true }
      if (!isSanitized(lead)) {
        if (NOT_SANITIZED.has(lead.status)) return { done: false, retryInMs: 30_000, reason: 'the report is not sanitized yet' }
        // Processing gave up before sanitizing: its text is raw, and raw text never leaves fixloop.
        await repo.saveIssue(feedbackId, { sync_state: 'failing', last_error: 'the report was never sanitized: only sanitized text is pushed', retry_at: null }, clock.now())
        return { done: true }
      }
      const adapter = adapterFor(conn.kind as TrackerKind)
      const size = 1 + lead.duplicate_count
      const now = clock.now()
      if (link.issue_id !== null && size === link.pushed_size) {
        if (link.sync_state !== 'synced') await repo.saveIssue(feedbackId, { sync_state: 'synced', last_error: null, attempts: 0, retry_at: null }, now)
        return { done: true }
      }
      const wait = budget.waitMs(conn.app_id, conn.org_id)
      if (wait > 0) {
        return { done: false, retryInMs: wait, reason: `the App's tracker took its share of the worker (${share.appBudgetMs / 1000} s of calls per ${share.windowMs / 1000} s, ${share.orgBudgetMs / 1000} s for all its Org's Apps): the push waits its turn` }
      }
      const began = performance.now()
      try {
        if (!adapter) throw new TrackerError('rejected', `${conn.kind} is not available on this server`)
        const target = { ...(await trackers.targetOf(conn)), budget: time }
        const draft = draftOf(lead, deps.publicUrl)
        const comment = link.issue_id !== null && commentDue(link.pushed_size, size, link.commented_at, now)
        const calls = link.issue_id === null ? (unsaved.has(feedbackId) ? 0 : CREATE_CALLS) : comment ? 2 : 1
        if (!time.fits(calls * callDeadlineMs(target))) throw new OutOfJobTime(link.issue_id === null ? 'creating the issue' : 'bringing the issue up to date')
        if (link.issue_id === null) {
          const made = unsaved.get(feedbackId) ?? { issue: await adapter.createIssue(target, draft), size }
          unsaved.set(feedbackId, made)
          const { issue } = made
          await repo.saveIssue(
            feedbackId,
            { issue_id: issue.id, issue_key: issue.key, issue_url: issue.url, state_name: issue.state.name, state_category: issue.state.category, pushed_size: made.size, sync_state: 'synced', last_error: null, attempts: 0, retry_at: null, synced_at: clock.now() },
            clock.now(),
          )
          // Written for a smaller cluster before the outage: the next round sees it and brings it up to date.
          unsaved.delete(feedbackId)
        } else {
          await adapter.updateIssue(target, link.issue_id, { title: draft.title, body: draft.body })
          if (comment) await adapter.addComment(target, link.issue_id, growthComment(link.pushed_size, size, deps.publicUrl, lead))
          await repo.saveIssue(feedbackId, { pushed_size: size, ...(comment ? { commented_at: now } : {}), sync_state: 'synced', last_error: null, attempts: 0, retry_at: null, synced_at: clock.now() }, clock.now())
        }
        await healthy(conn)
      } catch (e) {
        // Nothing of this round was left half-done at the tracker: no call was started that could not end
        // (a create after its refused first try is made again next run; an update is made whole again).
        if (e instanceof OutOfJobTime) return { done: false, retryInMs: PUSH_CONTINUES_MS, reason: e.message }
        if (!(e instanceof TrackerError)) throw e
        if (e.failure === 'not_found' && link.issue_id !== null) {
          await repo.applyNews(link.app_id, { deliveryId: null, feedbackId, state: { name: link.state_name ?? 'deleted', category: link.state_category ?? 'open' }, deleted: true, action: 'ignore' })
          return { done: true }
        }
        const attempts = link.attempts + 1
        const backoff = Math.max(e.retryAfterMs ?? 0, pushBackoffMs(attempts))
        const retryAt = clock.now() + backoff
        await repo.saveIssue(feedbackId, { sync_state: 'failing', last_error: e.message, attempts, retry_at: retryAt }, clock.now())
        await repo.setHealth(conn.app_id, { error: e.message, at: clock.now(), retryAt })
        log.warn('tracker push failed', { feedbackId, kind: conn.kind, failure: e.failure, status: e.status, retryInMs: backoff, error: e.message })
        return { done: false, retryInMs: backoff, reason: e.message }
      } finally {
        budget.spend(conn.app_id, conn.org_id, performance.now() - began)
      }
    }
    return { done: true }
  }

  /**
   * Apps whose tracker asked the polls to wait (429, or 403 with Retry-After), until when (epoch ms): their
   * issues are skipped until then. Kept by this process only (another node may ask once more).
   */
  const throttledUntil = new Map<string, number>()

  /**
   * One polling pass from `cursor` (a lead id): the next cursor ('' when the pass reached the end), and
   * how many Apps' trackers asked to wait in it. The issues of every App are in one walk, so a tracker's
   * answer is held to its own App: after a failure, the App's other issues wait for the next pass (one
   * deadline per App and pass, not one per issue: a tracker trickling each answer to its deadline (15 s)
   * held the walk for every App 50 times over); after a 429 its issues wait for the tracker's Retry-After;
   * an App past its share of tracker time (core/time-share.ts) is skipped until its window starts again.
   * A 429 used to end the pass, and the next one started with the refused issue again: a tracker that
   * always throttles (an Org's own server, or a token over its rate limit) stopped the polling of every
   * other App's issues for good.
   *
   * `time`: the job's (core/job-budget.ts). A read whose deadline would end past it is not started: the
   * pass stops before that issue (the cursor stays on the one before) and the next pass goes on from there.
   * The shares bound each App and Org, not the pass: 50 issues of 50 Orgs each held to its deadline were
   * 50 × 20 s, far past the job's lease.
   */
  async function pollPass(cursor: string, time: JobBudget = UNBOUNDED): Promise<{ cursor: string; read: number; moved: number; throttled: number }> {
    const batch = await repo.openIssues(cursor, POLL_BATCH)
    const conns = new Map<string, TrackerConnectionRow | undefined>()
    const failedApps = new Set<string>()
    const started = clock.now()
    for (const [appId, until] of throttledUntil) if (until <= started) throttledUntil.delete(appId)
    let read = 0
    let moved = 0
    let throttled = 0
    let outOfTime = false
    for (const link of batch) {
      const before = cursor
      cursor = link.feedback_id
      if (failedApps.has(link.app_id) || (throttledUntil.get(link.app_id) ?? 0) > clock.now() || budget.waitMs(link.app_id, link.org_id) > 0) continue
      if (!conns.has(link.app_id)) conns.set(link.app_id, await repo.connection(link.app_id))
      const conn = conns.get(link.app_id)
      const adapter = conn ? adapterFor(conn.kind as TrackerKind) : null
      if (conn && adapter && link.issue_id !== null && linkFollows(conn, link)) {
        const began = performance.now()
        try {
          const target = await trackers.targetOf(conn)
          if (!time.fits(callDeadlineMs(target))) {
            cursor = before
            outOfTime = true
            break
          }
          const issue = await adapter.readIssue(target, link.issue_id).finally(() => budget.spend(link.app_id, link.org_id, performance.now() - began))
          read++
          const r = await repo.applyNews(link.app_id, { deliveryId: null, feedbackId: link.feedback_id, state: issue.state, deleted: false, action: actionFor(issue.state, parseStateMap(conn.state_map)) })
          if (r.outcome === 'moved') moved++
          if (link.cluster_size !== link.pushed_size && link.sync_state === 'synced') await repo.queuePushes(link.app_id, { create: [], refresh: [link.feedback_id] })
          await healthy(conn)
          conn.last_error = null
        } catch (e) {
          if (!(e instanceof TrackerError)) throw e
          if (e.failure === 'not_found') {
            await repo.applyNews(link.app_id, { deliveryId: null, feedbackId: link.feedback_id, state: { name: 'deleted', category: 'open' }, deleted: true, action: 'ignore' })
          } else {
            const retryAt = e.retryAfterMs === null ? null : clock.now() + e.retryAfterMs
            await repo.setHealth(conn.app_id, { error: e.message, at: clock.now(), retryAt })
            conn.last_error = e.message
            log.warn('tracker poll failed', { feedbackId: link.feedback_id, kind: conn.kind, failure: e.failure, error: e.message })
            failedApps.add(link.app_id)
            if (e.failure === 'rate_limited') {
              throttledUntil.set(link.app_id, clock.now() + (e.retryAfterMs ?? 60_000))
              throttled++
            }
          }
        }
      }
    }
    return { cursor: batch.length === POLL_BATCH || outOfTime ? cursor : '', read, moved, throttled }
  }

  return { pushLead, pollPass }
}
export type TrackerSync = ReturnType<typeof createTrackerSync>
