/** SQLite side of modules/git-hooks/repo.ts: moves and events (src/db/bodies/pr-changes.ts) join the lifecycle's SQLite side in the delivery's transaction. */
import type { Statement } from 'bun:sqlite'
import type { Clock } from '../../core/clock'
import type { SqliteLifecycle } from './lifecycle'
import { GIT_DELIVERY_RETENTION_MS, keyList, PENDING_REVIEWS_MAX, pendingFull, type DeliveryKeys, type GitHooksRepo, type PrReport } from '../../modules/git-hooks/repo'
import { prChangeBodies } from '../bodies/pr-changes'
import type { SqliteStorage } from './storage'

export function createSqliteGitHooksRepo({ sqlite }: SqliteStorage, side: SqliteLifecycle, clock: Clock): GitHooksRepo {
  // The App's runs are few (runs per day are capped): agent_runs_app_idx bounds the search.
  const reportOfPr: Statement = sqlite.query(
    `SELECT f.id, f.org_id AS orgId, f.app_id AS appId, f.status, f.merge_request_url AS prUrl
       FROM agent_runs r JOIN feedback f ON f.id = r.feedback_id
      WHERE r.app_id = ? AND r.pr_url = ? AND f.app_id = r.app_id AND f.duplicate_of_id IS NULL AND f.merge_request_url = r.pr_url
      ORDER BY r.id DESC LIMIT 1`,
  )
  const remember: Statement = sqlite.query('INSERT INTO git_host_deliveries (app_id, delivery_id, received_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING')
  const forget: Statement = sqlite.query('DELETE FROM git_host_deliveries WHERE app_id = ? AND received_at < ?')
  // The succeeded runs (agent_runs_status_idx), not the whole feedback table.
  const openPrs: Statement = sqlite.query(
    `SELECT r.id AS runId, f.id, f.org_id AS orgId, f.app_id AS appId, f.status, f.merge_request_url AS prUrl
       FROM agent_runs r JOIN feedback f ON f.id = r.feedback_id
      WHERE r.status = 'succeeded' AND r.pr_url IS NOT NULL AND r.id > ? AND f.status = 'pr_opened' AND f.duplicate_of_id IS NULL AND f.merge_request_url = r.pr_url
      ORDER BY r.id LIMIT ?`,
  )
  const insertPending: Statement = sqlite.query(
    'INSERT INTO pending_reviews (id, org_id, app_id, feedback_id, pr_url, text, author, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  )
  const pendingCount: Statement = sqlite.query('SELECT COUNT(*) AS n FROM pending_reviews WHERE feedback_id = ?')
  const closedPrs: Statement = sqlite.query(
    `SELECT f.id, f.org_id AS orgId, f.app_id AS appId, f.status, f.merge_request_url AS prUrl
       FROM closed_pull_requests c JOIN feedback f ON f.id = c.feedback_id
      WHERE c.feedback_id > ? AND c.closed_at >= ? AND f.status = 'awaiting_manual' AND f.duplicate_of_id IS NULL AND f.merge_request_url = c.pr_url
      ORDER BY c.feedback_id LIMIT ?`,
  )
  const changes = prChangeBodies(side.bodies)
  /** Every key remembered; false when one of them was already (a replay). */
  const rememberAll = (appId: string, keys: DeliveryKeys, now: number): boolean => {
    let fresh = true
    for (const key of keyList(keys)) if ((remember.run(appId, key, now) as { changes: number }).changes === 0) fresh = false
    return fresh
  }

  return {
    openPullRequests: async (afterRunId, limit) =>
      (openPrs.all(afterRunId, limit) as (PrReport & { runId: string })[]).map(({ runId, ...report }) => ({ runId, report })),
    closedPullRequests: async (after, since, limit) => closedPrs.all(after, since, limit) as PrReport[],
    reportOfPr: async (appId, prUrl) => (reportOfPr.get(appId, prUrl) as PrReport | null) ?? undefined,
    queueReview: async (appId, delivery, review) =>
      sqlite
        .transaction(() => {
          const now = clock.now()
          if (!rememberAll(appId, delivery, now)) return { outcome: 'replayed' as const }
          forget.run(appId, now - GIT_DELIVERY_RETENTION_MS)
          const { report } = review
          const waiting = (pendingCount.get(report.id) as { n: number }).n
          if (waiting >= PENDING_REVIEWS_MAX) return { outcome: 'review_refused' as const, reason: pendingFull(waiting) }
          insertPending.run(review.id, report.orgId, report.appId, report.id, report.prUrl, review.text, review.author, now)
          side.enqueue('review', { feedbackId: report.id })
          return { outcome: 'review_queued' as const, position: waiting + 1 }
        })
        .immediate(),
    receive: async (appId, delivery, apply) =>
      sqlite
        .transaction(() => {
          const now = clock.now()
          if (!rememberAll(appId, delivery, now)) return { outcome: 'replayed' as const }
          forget.run(appId, now - GIT_DELIVERY_RETENTION_MS)
          if (!apply) return { outcome: 'unchanged' as const }
          const { report, change } = apply
          const moved = side.driver.run(changes.apply(report, change, now))
          if (moved) return { outcome: 'moved' as const, moved }
          // Its review iteration is running: the news waits for the run's end (src/db/sqlite/agent-runs.ts).
          return side.driver.run(changes.defer(report, change, now)) ? { outcome: 'deferred' as const } : { outcome: 'unchanged' as const }
        })
        .immediate(),
  }
}
