/**
 * The issue-tracker sync's two business transactions, written once for both dialects
 * (src/db/tx-body.ts): queueing pushes of reports' issues (the App's event cursor moved, links created,
 * push jobs planned) and applying a tracker's news about an issue (a replayed delivery, a deleted issue,
 * a state change moving the lead and the duplicates that follow it). The statements are TRACKER_SQL
 * (src/db/sql/trackers.ts); each dialect's repository (src/db/sqlite/trackers.ts, src/db/pg/trackers.ts) runs these
 * bodies in a transaction and keeps its reads and audit writes.
 */
import type { FeedbackStatus } from '../../core/fsm'
import { GIT_DELIVERY_RETENTION_MS, resolvedUserId } from '../../modules/git-hooks/repo'
import { duplicateFollows, newsMove, pushPlan, trackerDeliveryKeys, type TrackerIssueRow, type TrackersRepo } from '../../modules/trackers/repo'
import { TRACKER_SQL } from '../sql/trackers'
import type { Clock } from '../../core/clock'
import { all, get, lockingRead, run, sql, type Body } from '../tx-body'
import type { LifecycleBodies } from './lifecycle'

type Submitter = { submitted_mode: string; external_user_id: string | null }
type LeadState = { status: FeedbackStatus; duplicate_of_id: string | null; org_id: string; app_id: string; merge_request_url: string | null } & Submitter
type Pushes = Parameters<TrackersRepo['queuePushes']>[1]
type News = Parameters<TrackersRepo['applyNews']>[1]
type NewsOutcome = Awaited<ReturnType<TrackersRepo['applyNews']>>

const Q = Object.fromEntries(Object.entries(TRACKER_SQL).map(([k, v]) => [k, sql(v)])) as Record<keyof typeof TRACKER_SQL, ReturnType<typeof sql>>
// Read-then-write locks what it read on PostgreSQL. The link is locked before the job is looked for in a
// statement of its own, so that statement sees (READ COMMITTED: a new snapshot) the job a transaction
// that held the lock before committed.
const LINK = lockingRead(TRACKER_SQL.issue)
const LEAD = lockingRead(TRACKER_SQL.leadState)
const DUPLICATES = lockingRead(TRACKER_SQL.duplicates)

export function trackerBodies(lifecycle: LifecycleBodies, clock: Clock) {
  return {
    /** False (nothing written) when the App's event cursor moved meanwhile. */
    *queuePushes(appId: string, p: Pushes): Body<boolean> {
      if (p.cursor && (yield* run(Q.moveCursor, p.cursor.to, appId, p.cursor.from)) === 0) return false
      const now = clock.now()
      for (const l of p.create) yield* run(Q.insertLink, l.feedbackId, l.orgId, appId, l.kind, l.project, now, now)
      for (const id of new Set([...p.create.map((l) => l.feedbackId), ...p.refresh])) {
        const link = yield* get<TrackerIssueRow>(LINK, id)
        if (!link || link.sync_state === 'deleted' || !(yield* get<{ live: boolean | number }>(Q.follows, id))!.live) continue
        yield* run(Q.markPending, now, id)
        const waiting = !!(yield* get<{ waiting: boolean | number }>(Q.pushWaiting, id, now))!.waiting
        const running = !!(yield* get<{ running: boolean | number }>(Q.pushRunning, id, now))!.running
        const plan = pushPlan(link, { waiting, running }, now)
        if (plan) yield* lifecycle.enqueue('tracker_push', { feedbackId: id }, plan.runAfter)
      }
      return true
    },

    *applyNews(appId: string, news: News): Body<NewsOutcome> {
      const now = clock.now()
      if (news.deliveryId !== null) {
        let fresh = true
        for (const key of trackerDeliveryKeys(news.deliveryId)) if ((yield* run(Q.remember, appId, key, now)) === 0) fresh = false
        if (!fresh) return { outcome: 'replayed' as const }
        yield* run(Q.forget, appId, now - GIT_DELIVERY_RETENTION_MS)
      }
      // The lead first, then its link (the order every cluster change locks in: member, then lead).
      const lead = yield* get<LeadState>(LEAD, news.feedbackId)
      const link = yield* get<TrackerIssueRow>(LINK, news.feedbackId)
      if (!link || link.sync_state === 'deleted') return { outcome: 'unchanged' as const }
      if (news.deleted) {
        yield* run(Q.markDeleted, now, news.feedbackId)
        return { outcome: 'deleted' as const }
      }
      if (link.state_name === news.state.name) return { outcome: 'unchanged' as const }
      yield* run(Q.setState, news.state.name, news.state.category, now, news.feedbackId)
      const move = lead ? newsMove(news.action, lead) : null
      if (!lead || !move) return { outcome: 'unchanged' as const }
      if (!(yield* lifecycle.move(news.feedbackId, move.to, { by: 'system', from: move.from }))) return { outcome: 'unchanged' as const }
      const scope = { orgId: lead.org_id, appId: lead.app_id }
      function* resolved(id: string, who: Submitter): Body<void> {
        if (move!.to === 'resolved') yield* lifecycle.record(scope, 'feedback.resolved', { feedbackId: id, leadFeedbackId: news.feedbackId, prUrl: lead!.merge_request_url, externalUserId: resolvedUserId(who) })
      }
      yield* resolved(news.feedbackId, lead)
      const moved = [news.feedbackId]
      for (const d of yield* all<{ id: string; status: FeedbackStatus } & Submitter>(DUPLICATES, news.feedbackId)) {
        if (!duplicateFollows(d.status, move.to)) continue
        if (yield* lifecycle.move(d.id, move.to, { by: 'lead', from: d.status })) {
          moved.push(d.id)
          yield* resolved(d.id, d)
        }
      }
      return { outcome: 'moved' as const, moved }
    },
  }
}
