/**
 * modules/git-hooks/repo.ts written once for both dialects (src/db/tx-body.ts): which report a pull
 * request belongs to, replayed deliveries, reviews queued for an iteration, and the news of a pull/merge
 * request applied (src/db/bodies/pr-changes.ts) or held for a running iteration, in the delivery's
 * transaction. Each store builds it over its dialect's runner and lifecycle bodies.
 */
import type { Clock } from '../../core/clock'
import { GIT_DELIVERY_RETENTION_MS, keyList, PENDING_REVIEWS_MAX, pendingFull, type DeliveryKeys, type GitHooksRepo, type PrReport } from '../../modules/git-hooks/repo'
import { all, get, lockingRead, run, sql, type Body, type BodyRunner } from '../tx-body'
import type { LifecycleBodies } from './lifecycle'
import { prChangeBodies } from './pr-changes'

// The App's runs are few (runs per day are capped): agent_runs_app_idx bounds the search.
const REPORT_OF_PR = sql(
  `SELECT f.id, f.org_id AS "orgId", f.app_id AS "appId", f.status, f.merge_request_url AS "prUrl"
     FROM agent_runs r JOIN feedback f ON f.id = r.feedback_id
    WHERE r.app_id = ? AND r.pr_url = ? AND f.app_id = r.app_id AND f.duplicate_of_id IS NULL AND f.merge_request_url = r.pr_url
    ORDER BY r.id DESC LIMIT 1`,
)
// The succeeded runs (agent_runs_status_idx), not the whole feedback table.
const OPEN_PRS = sql(
  `SELECT r.id AS "runId", f.id, f.org_id AS "orgId", f.app_id AS "appId", f.status, f.merge_request_url AS "prUrl"
     FROM agent_runs r JOIN feedback f ON f.id = r.feedback_id
    WHERE r.status = 'succeeded' AND r.pr_url IS NOT NULL AND r.id > ? AND f.status = 'pr_opened' AND f.duplicate_of_id IS NULL AND f.merge_request_url = r.pr_url
    ORDER BY r.id LIMIT ?`,
)
const CLOSED_PRS = sql(
  `SELECT f.id, f.org_id AS "orgId", f.app_id AS "appId", f.status, f.merge_request_url AS "prUrl"
     FROM closed_pull_requests c JOIN feedback f ON f.id = c.feedback_id
    WHERE c.feedback_id > ? AND c.closed_at >= ? AND f.status = 'awaiting_manual' AND f.duplicate_of_id IS NULL AND f.merge_request_url = c.pr_url
    ORDER BY c.feedback_id LIMIT ?`,
)
const REMEMBER = sql('INSERT INTO git_host_deliveries (app_id, delivery_id, received_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING')
const FORGET = sql('DELETE FROM git_host_deliveries WHERE app_id = ? AND received_at < ?')
const INSERT_PENDING = sql('INSERT INTO pending_reviews (id, org_id, app_id, feedback_id, pr_url, text, author, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
// Locked on PostgreSQL: two reviews queued at once count each other (one waits for the other's commit).
const LOCK_REPORT = lockingRead('SELECT 1 AS locked FROM feedback WHERE id = ?')
const PENDING_COUNT = sql('SELECT COUNT(*) AS n FROM pending_reviews WHERE feedback_id = ?')

export function createGitHooksRepo(runner: BodyRunner, lifecycle: LifecycleBodies, clock: Clock): GitHooksRepo {
  const changes = prChangeBodies(lifecycle)

  /** Every key remembered, and the old ones forgotten; false when one of them was already (a replay). */
  function* fresh(appId: string, keys: DeliveryKeys, now: number): Body<boolean> {
    let fresh = true
    for (const key of keyList(keys)) if ((yield* run(REMEMBER, appId, key, now)) === 0) fresh = false
    if (fresh) yield* run(FORGET, appId, now - GIT_DELIVERY_RETENTION_MS)
    return fresh
  }

  return {
    openPullRequests: async (afterRunId, limit) =>
      (await runner.read(all<PrReport & { runId: string }>(OPEN_PRS, afterRunId, limit))).map(({ runId, ...report }) => ({ runId, report })),
    closedPullRequests: (after, since, limit) => runner.read(all<PrReport>(CLOSED_PRS, after, since, limit)),
    reportOfPr: (appId, prUrl) => runner.read(get<PrReport>(REPORT_OF_PR, appId, prUrl)),
    queueReview: (appId, delivery, review) =>
      runner.transaction(
        (function* () {
          const now = clock.now()
          if (!(yield* fresh(appId, delivery, now))) return { outcome: 'replayed' as const }
          const { report } = review
          yield* get(LOCK_REPORT, report.id)
          const waiting = (yield* get<{ n: number }>(PENDING_COUNT, report.id))!.n
          if (waiting >= PENDING_REVIEWS_MAX) return { outcome: 'review_refused' as const, reason: pendingFull(waiting) }
          yield* run(INSERT_PENDING, review.id, report.orgId, report.appId, report.id, report.prUrl, review.text, review.author, now)
          yield* lifecycle.enqueue('review', { feedbackId: report.id })
          return { outcome: 'review_queued' as const, position: waiting + 1 }
        })(),
      ),
    receive: (appId, delivery, apply) =>
      runner.transaction(
        (function* () {
          const now = clock.now()
          if (!(yield* fresh(appId, delivery, now))) return { outcome: 'replayed' as const }
          if (!apply) return { outcome: 'unchanged' as const }
          const { report, change } = apply
          const moved = yield* changes.apply(report, change, now)
          if (moved) return { outcome: 'moved' as const, moved }
          // Its review iteration is running: the news waits for the run's end (src/db/bodies/agent-runs.ts).
          return (yield* changes.defer(report, change, now)) ? { outcome: 'deferred' as const } : { outcome: 'unchanged' as const }
        })(),
      ),
  }
}
