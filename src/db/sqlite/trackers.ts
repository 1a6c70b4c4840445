/** SQLite side of modules/trackers/repo.ts: the statements of TRACKER_SQL; moves and events join the lifecycle's SQLite side. */
import type { Clock } from '../../core/clock'
import { PATCH_COLUMNS, TRACKER_SQL as Q } from '../sql/trackers'
import type { FeedbackStatus } from '../../core/fsm'
import type { SqliteLifecycle } from './lifecycle'
import { GIT_DELIVERY_RETENTION_MS, resolvedUserId } from '../../modules/git-hooks/repo'
import {
  duplicateFollows,
  newsMove,
  pushPlan,
  trackerDeliveryKeys,
  type LeadForTracker,
  type TrackerConnectionRow,
  type TrackerIssueRow,
  type TrackersRepo,
} from '../../modules/trackers/repo'
import { sqliteAuditWriter } from './audit-writer'
import type { SqliteStorage } from './storage'

type Submitter = { submitted_mode: string; external_user_id: string | null }

export function createSqliteTrackersRepo({ sqlite }: SqliteStorage, side: SqliteLifecycle, clock: Clock): TrackersRepo {
  const writeAudit = sqliteAuditWriter(sqlite, clock)
  const q = (text: string) => sqlite.query(text)
  const changes = (r: unknown) => (r as { changes: number }).changes
  const tx = <T>(work: () => T): T => sqlite.transaction(work).immediate()
  const placeholders = (n: number) => Array.from({ length: n }, () => '?').join(', ')

  return {
    connection: async (appId) => (q(Q.connection).get(appId) as TrackerConnectionRow | null) ?? undefined,
    putConnection: async (r, audit) =>
      tx(() => {
        q(Q.insertConnection).run(r.app_id, r.org_id, r.kind, r.api_url, r.project, r.account, r.token_sealed, r.webhook_secret_sealed, r.actor, r.state_map, r.rules, r.org_id, r.created_at, r.updated_at)
        for (const e of audit) writeAudit(e)
      }),
    removeConnection: async (appId, audit) =>
      tx(() => {
        const removed = changes(q(Q.removeConnection).run(appId)) > 0
        if (removed) for (const e of audit) writeAudit(e)
        return removed
      }),
    setWebhookSecret: async (appId, sealed, now, audit) =>
      tx(() => {
        const done = changes(q(Q.setSecret).run(sealed, now, appId)) > 0
        if (done) for (const e of audit) writeAudit(e)
        return done
      }),
    setHealth: async (appId, h) => void q(Q.setHealth).run(h.error, h.at, h.retryAt, appId),
    pendingCount: async (appId) => (q(Q.pendingCount).get(appId) as { n: number }).n,
    failing: async () => q(Q.failing).all() as never,
    connectedOrgs: async () => (q(Q.connectedOrgs).all() as { org_id: string }[]).map((r) => r.org_id),
    connectionsOf: async (orgId) => q(Q.connectionsOf).all(orgId) as TrackerConnectionRow[],
    eventsAfter: async (orgId, appId, seq, limit) => q(Q.eventsAfter).all(orgId, seq, appId, limit) as never,
    lead: async (id) => (q(Q.lead).get(id) as LeadForTracker | null) ?? undefined,
    reportsOf: async (ids) => (ids.length === 0 ? [] : (q(`SELECT id, severity, duplicate_of_id FROM feedback WHERE id IN (${placeholders(ids.length)}) ORDER BY id`).all(...ids) as never)),
    issue: async (id) => (q(Q.issue).get(id) as TrackerIssueRow | null) ?? undefined,
    // Every list page asks: an instance without any tracker issue (most, and every one before its first
    // push) answers from one probe of the table instead of encoding and joining the page's ids.
    issuesOf: async (ids) =>
      ids.length === 0 || q('SELECT 1 FROM tracker_issues LIMIT 1').get() === null
        ? []
        : (q('SELECT t.* FROM json_each(?) j JOIN tracker_issues t ON t.feedback_id = j.value ORDER BY t.feedback_id').all(JSON.stringify(ids)) as TrackerIssueRow[]),
    issueByTrackerId: async (conn, issueId) => (q(Q.issueByTrackerId).get(conn.app_id, conn.kind, conn.project, issueId) as TrackerIssueRow | null) ?? undefined,
    queuePushes: async (appId, p) =>
      tx(() => {
        if (p.cursor && changes(q(Q.moveCursor).run(p.cursor.to, appId, p.cursor.from)) === 0) return false
        const now = clock.now()
        for (const l of p.create) q(Q.insertLink).run(l.feedbackId, l.orgId, appId, l.kind, l.project, now, now)
        for (const id of new Set([...p.create.map((l) => l.feedbackId), ...p.refresh])) {
          const link = q(Q.issue).get(id) as TrackerIssueRow | null
          if (!link || link.sync_state === 'deleted' || !(q(Q.follows).get(id) as { live: number }).live) continue
          q(Q.markPending).run(now, id)
          const plan = pushPlan(link, { waiting: !!(q(Q.pushWaiting).get(id, now) as { waiting: number }).waiting, running: !!(q(Q.pushRunning).get(id, now) as { running: number }).running }, now)
          if (plan) side.enqueue('tracker_push', { feedbackId: id }, plan.runAfter)
        }
        return true
      }),
    saveIssue: async (feedbackId, patch, now) => {
      const cols = PATCH_COLUMNS.filter((c) => patch[c] !== undefined)
      if (cols.length === 0) return
      q(`UPDATE tracker_issues SET ${cols.map((c) => `${c} = ?`).join(', ')}, updated_at = ? WHERE feedback_id = ?`).run(...cols.map((c) => patch[c] as never), now, feedbackId)
    },
    applyNews: async (appId, news) =>
      tx(() => {
        const now = clock.now()
        if (news.deliveryId !== null) {
          let fresh = true
          for (const key of trackerDeliveryKeys(news.deliveryId)) if (changes(q(Q.remember).run(appId, key, now)) === 0) fresh = false
          if (!fresh) return { outcome: 'replayed' as const }
          q(Q.forget).run(appId, now - GIT_DELIVERY_RETENTION_MS)
        }
        const link = q(Q.issue).get(news.feedbackId) as TrackerIssueRow | null
        if (!link || link.sync_state === 'deleted') return { outcome: 'unchanged' as const }
        if (news.deleted) {
          q(Q.markDeleted).run(now, news.feedbackId)
          return { outcome: 'deleted' as const }
        }
        if (link.state_name === news.state.name) return { outcome: 'unchanged' as const }
        q(Q.setState).run(news.state.name, news.state.category, now, news.feedbackId)
        const lead = q(Q.leadState).get(news.feedbackId) as ({ status: FeedbackStatus; duplicate_of_id: string | null; org_id: string; app_id: string; merge_request_url: string | null } & Submitter) | null
        const move = lead ? newsMove(news.action, lead) : null
        if (!lead || !move) return { outcome: 'unchanged' as const }
        if (!side.move(sqlite, news.feedbackId, move.to, { by: 'system', from: move.from })) return { outcome: 'unchanged' as const }
        const scope = { orgId: lead.org_id, appId: lead.app_id }
        const resolved = (id: string, who: Submitter) =>
          move.to === 'resolved' && side.record(scope, 'feedback.resolved', { feedbackId: id, leadFeedbackId: news.feedbackId, prUrl: lead.merge_request_url, externalUserId: resolvedUserId(who) })
        resolved(news.feedbackId, lead)
        const moved = [news.feedbackId]
        for (const d of q(Q.duplicates).all(news.feedbackId) as ({ id: string; status: FeedbackStatus } & Submitter)[]) {
          if (!duplicateFollows(d.status, move.to)) continue
          if (side.move(sqlite, d.id, move.to, { by: 'lead', from: d.status })) {
            moved.push(d.id)
            resolved(d.id, d)
          }
        }
        return { outcome: 'moved' as const, moved }
      }),
    openIssues: async (after, limit) => q(Q.openIssues).all(after, limit) as never,
  }
}
