/** PostgreSQL side of modules/trackers/repo.ts: the statements of TRACKER_SQL (numbered); pushes queued and news applied are written once (src/db/bodies/trackers.ts). */
import type { Clock } from '../../core/clock'
import { PATCH_COLUMNS, TRACKER_SQL } from '../sql/trackers'
import type { LeadForTracker, TrackerConnectionRow, TrackerIssueRow, TrackersRepo } from '../../modules/trackers/repo'
import { writeAuditPg } from './audit-writer'
import type { PgLifecycle, PgTx } from './lifecycle'
import { exec, many, one, type PgStorage } from './storage'
import { trackerBodies } from '../bodies/trackers'
import { runPg } from './tx-body'

/** `?` → `$1, $2, …` (the statements are written once, for both dialects). */
const numbered = (text: string) => {
  let i = 0
  return text.replace(/\?/g, () => `$${++i}`)
}
export function createPgTrackersRepo(storage: PgStorage, side: PgLifecycle, clock: Clock): TrackersRepo {
  const tx = <T>(work: (t: PgTx) => Promise<T>) => storage.tx((client, _db, onCommit) => work({ client, onCommit }))
  const pool = storage.pool
  const Q = Object.fromEntries(Object.entries(TRACKER_SQL).map(([k, v]) => [k, numbered(v)])) as Record<keyof typeof TRACKER_SQL, string>
  const bodies = trackerBodies(side.bodies, clock)
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
    failingByKind: async () => (await many<{ kind: string; n: number | string }>(pool, Q.failingByKind)).map((r) => ({ kind: r.kind, n: Number(r.n) })),
    connectedOrgs: async () => (await many<{ org_id: string }>(pool, Q.connectedOrgs)).map((r) => r.org_id),
    connectionsOf: (orgId) => many<TrackerConnectionRow>(pool, Q.connectionsOf, [orgId]),
    eventsAfter: (orgId, appId, seq, limit) => many(pool, Q.eventsAfter, [orgId, seq, appId, limit]),
    lead: (id) => one<LeadForTracker>(pool, Q.lead, [id]),
    reportsOf: async (ids) => (ids.length === 0 ? [] : many(pool, `SELECT id, severity, duplicate_of_id FROM feedback WHERE id IN (${list(ids.length)}) ORDER BY id`, ids)),
    issue: (id) => one<TrackerIssueRow>(pool, Q.issue, [id]),
    issuesOf: async (ids) => (ids.length === 0 ? [] : many<TrackerIssueRow>(pool, 'SELECT * FROM tracker_issues WHERE feedback_id = ANY($1::text[]) ORDER BY feedback_id', [ids])),
    issueByTrackerId: (conn, issueId) => one<TrackerIssueRow>(pool, Q.issueByTrackerId, [conn.app_id, conn.kind, conn.project, issueId]),
    queuePushes: (appId, p) => tx((t) => runPg(t, bodies.queuePushes(appId, p))),
    saveIssue: async (feedbackId, patch, now) => {
      const cols = PATCH_COLUMNS.filter((c) => patch[c] !== undefined)
      if (cols.length === 0) return
      await exec(pool, `UPDATE tracker_issues SET ${cols.map((c, i) => `${c} = $${i + 1}`).join(', ')}, updated_at = $${cols.length + 1} WHERE feedback_id = $${cols.length + 2}`, [
        ...cols.map((c) => patch[c]),
        now,
        feedbackId,
      ])
    },
    applyNews: (appId, news) => tx((t) => runPg(t, bodies.applyNews(appId, news))),
    openIssues: (after, limit) => many(pool, Q.openIssues, [after, limit]),
  }
}
