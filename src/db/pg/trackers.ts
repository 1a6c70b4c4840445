/** PostgreSQL side of modules/trackers/repo.ts: the statements of TRACKER_SQL (numbered), the same moves and events as src/db/sqlite/trackers.ts. */
import type { Clock } from '../../core/clock'
import { PATCH_COLUMNS, TRACKER_SQL } from '../sql/trackers'
import type { FeedbackStatus } from '../../core/fsm'
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
import { writeAuditPg } from './audit-writer'
import type { PgLifecycle, PgTx } from './lifecycle'
import { exec, many, one, type PgStorage } from './storage'

type Submitter = { submitted_mode: string; external_user_id: string | null }

/** `?` → `$1, $2, …` (the statements are written once, for both dialects). */
const numbered = (text: string) => {
  let i = 0
  return text.replace(/\?/g, () => `$${++i}`)
}
export function createPgTrackersRepo(storage: PgStorage, side: PgLifecycle, clock: Clock): TrackersRepo {
  const tx = <T>(work: (t: PgTx) => Promise<T>) => storage.tx((client, _db, onCommit) => work({ client, onCommit }))
  const pool = storage.pool
  const Q = Object.fromEntries(Object.entries(TRACKER_SQL).map(([k, v]) => [k, numbered(v)])) as Record<keyof typeof TRACKER_SQL, string>
  // Read-then-write on PostgreSQL locks what it read.
  const ISSUE_FOR_UPDATE = `${Q.issue} FOR UPDATE`
  const LEAD_FOR_UPDATE = `${Q.leadState} FOR UPDATE`
  const DUPLICATES_FOR_UPDATE = `${Q.duplicates} FOR UPDATE`
  // The link locked first; the job looked for in a statement of its own after the lock is held, so it sees
  // (READ COMMITTED: a new snapshot) the job a transaction that held the lock before committed.
  const LINK_FOR_UPDATE = `${Q.issue} FOR UPDATE`
  const list = (n: number) => Array.from({ length: n }, (_, i) => `$${i + 1}`).join(', ')

  return {
    connection: (appId) => one<TrackerConnectionRow>(pool, Q.connection, [appId]),
    putConnection: (r, audit) =>
      tx(async (t) => {
        await exec(t.client, Q.insertConnection, [r.app_id, r.org_id, r.kind, r.api_url, r.project, r.account, r.token_sealed, r.webhook_secret_sealed, r.actor, r.state_map, r.rules, r.org_id, r.created_at, r.updated_at])
        for (const e of audit) await writeAuditPg(t.client, clock, e)
      }),
    removeConnection: (appId, audit) =>
      tx(async (t) => {
        const removed = (await exec(t.client, Q.removeConnection, [appId])) > 0
        if (removed) for (const e of audit) await writeAuditPg(t.client, clock, e)
        return removed
      }),
    setWebhookSecret: (appId, sealed, now, audit) =>
      tx(async (t) => {
        const done = (await exec(t.client, Q.setSecret, [sealed, now, appId])) > 0
        if (done) for (const e of audit) await writeAuditPg(t.client, clock, e)
        return done
      }),
    setHealth: async (appId, h) => void (await exec(pool, Q.setHealth, [h.error, h.at, h.retryAt, appId])),
    pendingCount: async (appId) => Number((await one<{ n: number }>(pool, Q.pendingCount, [appId]))!.n),
    failing: () => many(pool, Q.failing),
    connectedOrgs: async () => (await many<{ org_id: string }>(pool, Q.connectedOrgs)).map((r) => r.org_id),
    connectionsOf: (orgId) => many<TrackerConnectionRow>(pool, Q.connectionsOf, [orgId]),
    eventsAfter: (orgId, appId, seq, limit) => many(pool, Q.eventsAfter, [orgId, seq, appId, limit]),
    lead: (id) => one<LeadForTracker>(pool, Q.lead, [id]),
    reportsOf: async (ids) => (ids.length === 0 ? [] : many(pool, `SELECT id, severity, duplicate_of_id FROM feedback WHERE id IN (${list(ids.length)}) ORDER BY id`, ids)),
    issue: (id) => one<TrackerIssueRow>(pool, Q.issue, [id]),
    issuesOf: async (ids) => (ids.length === 0 ? [] : many<TrackerIssueRow>(pool, 'SELECT * FROM tracker_issues WHERE feedback_id = ANY($1::text[]) ORDER BY feedback_id', [ids])),
    issueByTrackerId: (conn, issueId) => one<TrackerIssueRow>(pool, Q.issueByTrackerId, [conn.app_id, conn.kind, conn.project, issueId]),
    queuePushes: (appId, p) =>
      tx(async (t) => {
        if (p.cursor && (await exec(t.client, Q.moveCursor, [p.cursor.to, appId, p.cursor.from])) === 0) return false
        const now = clock.now()
        for (const l of p.create) await exec(t.client, Q.insertLink, [l.feedbackId, l.orgId, appId, l.kind, l.project, now, now])
        for (const id of new Set([...p.create.map((l) => l.feedbackId), ...p.refresh])) {
          const link = await one<TrackerIssueRow>(t.client, LINK_FOR_UPDATE, [id])
          if (!link || link.sync_state === 'deleted' || !(await one<{ live: boolean }>(t.client, Q.follows, [id]))!.live) continue
          await exec(t.client, Q.markPending, [now, id])
          const waiting = (await one<{ waiting: boolean }>(t.client, Q.pushWaiting, [id, now]))!.waiting
          const running = (await one<{ running: boolean }>(t.client, Q.pushRunning, [id, now]))!.running
          const plan = pushPlan(link, { waiting, running }, now)
          if (plan) await side.enqueue(t, 'tracker_push', { feedbackId: id }, plan.runAfter)
        }
        return true
      }),
    saveIssue: async (feedbackId, patch, now) => {
      const cols = PATCH_COLUMNS.filter((c) => patch[c] !== undefined)
      if (cols.length === 0) return
      await exec(pool, `UPDATE tracker_issues SET ${cols.map((c, i) => `${c} = $${i + 1}`).join(', ')}, updated_at = $${cols.length + 1} WHERE feedback_id = $${cols.length + 2}`, [
        ...cols.map((c) => patch[c]),
        now,
        feedbackId,
      ])
    },
    applyNews: (appId, news) =>
      tx(async (t) => {
        const now = clock.now()
        if (news.deliveryId !== null) {
          let fresh = true
          for (const key of trackerDeliveryKeys(news.deliveryId)) if ((await exec(t.client, Q.remember, [appId, key, now])) === 0) fresh = false
          if (!fresh) return { outcome: 'replayed' as const }
          await exec(t.client, Q.forget, [appId, now - GIT_DELIVERY_RETENTION_MS])
        }
        // The lead first, then its link (the order every cluster change locks in: member, then lead).
        const lead = await one<{ status: FeedbackStatus; duplicate_of_id: string | null; org_id: string; app_id: string; merge_request_url: string | null } & Submitter>(t.client, LEAD_FOR_UPDATE, [news.feedbackId])
        const link = await one<TrackerIssueRow>(t.client, ISSUE_FOR_UPDATE, [news.feedbackId])
        if (!link || link.sync_state === 'deleted') return { outcome: 'unchanged' as const }
        if (news.deleted) {
          await exec(t.client, Q.markDeleted, [now, news.feedbackId])
          return { outcome: 'deleted' as const }
        }
        if (link.state_name === news.state.name) return { outcome: 'unchanged' as const }
        await exec(t.client, Q.setState, [news.state.name, news.state.category, now, news.feedbackId])
        const move = lead ? newsMove(news.action, lead) : null
        if (!lead || !move) return { outcome: 'unchanged' as const }
        if (!(await side.move(t, news.feedbackId, move.to, { by: 'system', from: move.from }))) return { outcome: 'unchanged' as const }
        const scope = { orgId: lead.org_id, appId: lead.app_id }
        const resolved = async (id: string, who: Submitter) => {
          if (move.to === 'resolved') await side.record(t, scope, 'feedback.resolved', { feedbackId: id, leadFeedbackId: news.feedbackId, prUrl: lead.merge_request_url, externalUserId: resolvedUserId(who) })
        }
        await resolved(news.feedbackId, lead)
        const moved = [news.feedbackId]
        for (const d of await many<{ id: string; status: FeedbackStatus } & Submitter>(t.client, DUPLICATES_FOR_UPDATE, [news.feedbackId])) {
          if (!duplicateFollows(d.status, move.to)) continue
          if (await side.move(t, d.id, move.to, { by: 'lead', from: d.status })) {
            moved.push(d.id)
            await resolved(d.id, d)
          }
        }
        return { outcome: 'moved' as const, moved }
      }),
    openIssues: (after, limit) => many(pool, Q.openIssues, [after, limit]),
  }
}
