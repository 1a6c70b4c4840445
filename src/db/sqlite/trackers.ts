/** SQLite side of modules/trackers/repo.ts: the statements of TRACKER_SQL; pushes queued and news applied are written once (src/db/bodies/trackers.ts). */
import type { Clock } from '../../core/clock'
import type { SqliteLifecycle } from './lifecycle'
import { PATCH_COLUMNS, TRACKER_SQL as Q } from '../sql/trackers'
import type { LeadForTracker, TrackerConnectionRow, TrackerIssueRow, TrackersRepo } from '../../modules/trackers/repo'
import { sqliteAuditWriter } from './audit-writer'
import type { SqliteStorage } from './storage'
import { trackerBodies } from '../bodies/trackers'

export function createSqliteTrackersRepo({ sqlite }: SqliteStorage, side: SqliteLifecycle, clock: Clock): TrackersRepo {
  const writeAudit = sqliteAuditWriter(sqlite, clock)
  const q = (text: string) => sqlite.query(text)
  const changes = (r: unknown) => (r as { changes: number }).changes
  const tx = <T>(work: () => T): T => sqlite.transaction(work).immediate()
  const placeholders = (n: number) => Array.from({ length: n }, () => '?').join(', ')
  const bodies = trackerBodies(side.bodies, clock)
  const { driver } = side

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
    failingByKind: async () => q(Q.failingByKind).all() as { kind: string; n: number }[],
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
    queuePushes: async (appId, p) => driver.transaction(bodies.queuePushes(appId, p)),
    saveIssue: async (feedbackId, patch, now) => {
      const cols = PATCH_COLUMNS.filter((c) => patch[c] !== undefined)
      if (cols.length === 0) return
      q(`UPDATE tracker_issues SET ${cols.map((c) => `${c} = ?`).join(', ')}, updated_at = ? WHERE feedback_id = ?`).run(...cols.map((c) => patch[c] as never), now, feedbackId)
    },
    applyNews: async (appId, news) => driver.transaction(bodies.applyNews(appId, news)),
    openIssues: async (after, limit) => q(Q.openIssues).all(after, limit) as never,
  }
}
