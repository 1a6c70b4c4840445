/** PostgreSQL side of modules/git-hooks/repo.ts: the same rows, moves and events (src/db/bodies/pr-changes.ts) as src/db/sqlite/git-hooks.ts. */
import type { Clock } from '../../core/clock'
import { GIT_DELIVERY_RETENTION_MS, keyList, PENDING_REVIEWS_MAX, pendingFull, type DeliveryKeys, type GitHooksRepo, type PrReport } from '../../modules/git-hooks/repo'
import type { PgLifecycle, PgTx } from './lifecycle'
import { prChangeBodies } from '../bodies/pr-changes'
import { runPg } from './tx-body'
import { exec, many, one, type PgStorage } from './storage'

const REPORT_OF_PR = `SELECT f.id, f.org_id AS "orgId", f.app_id AS "appId", f.status, f.merge_request_url AS "prUrl"
   FROM agent_runs r JOIN feedback f ON f.id = r.feedback_id
  WHERE r.app_id = $1 AND r.pr_url = $2 AND f.app_id = r.app_id AND f.duplicate_of_id IS NULL AND f.merge_request_url = r.pr_url
  ORDER BY r.id DESC LIMIT 1`
const OPEN_PRS = `SELECT r.id AS "runId", f.id, f.org_id AS "orgId", f.app_id AS "appId", f.status, f.merge_request_url AS "prUrl"
       FROM agent_runs r JOIN feedback f ON f.id = r.feedback_id
      WHERE r.status = 'succeeded' AND r.pr_url IS NOT NULL AND r.id > $1 AND f.status = 'pr_opened' AND f.duplicate_of_id IS NULL AND f.merge_request_url = r.pr_url
      ORDER BY r.id LIMIT $2`
const REMEMBER = 'INSERT INTO git_host_deliveries (app_id, delivery_id, received_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING'
const FORGET = 'DELETE FROM git_host_deliveries WHERE app_id = $1 AND received_at < $2'
const INSERT_PENDING = 'INSERT INTO pending_reviews (id, org_id, app_id, feedback_id, pr_url, text, author, received_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)'
// FOR UPDATE of the report: two reviews queued at once count each other (one waits for the other's commit).
const LOCK_REPORT = 'SELECT 1 FROM feedback WHERE id = $1 FOR UPDATE'
const PENDING_COUNT = 'SELECT COUNT(*)::int AS n FROM pending_reviews WHERE feedback_id = $1'
const CLOSED_PRS = `SELECT f.id, f.org_id AS "orgId", f.app_id AS "appId", f.status, f.merge_request_url AS "prUrl"
       FROM closed_pull_requests c JOIN feedback f ON f.id = c.feedback_id
      WHERE c.feedback_id > $1 AND c.closed_at >= $2 AND f.status = 'awaiting_manual' AND f.duplicate_of_id IS NULL AND f.merge_request_url = c.pr_url
      ORDER BY c.feedback_id LIMIT $3`

export function createPgGitHooksRepo(storage: PgStorage, side: PgLifecycle, clock: Clock): GitHooksRepo {
  const tx = <T>(work: (t: PgTx) => Promise<T>) => storage.tx((client, _db, onCommit) => work({ client, onCommit }))
  const changes = prChangeBodies(side.bodies)
  /** Every key remembered; false when one of them was already (a replay). */
  const rememberAll = async (t: PgTx, appId: string, keys: DeliveryKeys, now: number): Promise<boolean> => {
    let fresh = true
    for (const key of keyList(keys)) if ((await exec(t.client, REMEMBER, [appId, key, now])) === 0) fresh = false
    return fresh
  }
  return {
    openPullRequests: async (afterRunId, limit) =>
      (await many<PrReport & { runId: string }>(storage.pool, OPEN_PRS, [afterRunId, limit])).map(({ runId, ...report }) => ({ runId, report })),
    closedPullRequests: (after, since, limit) => many<PrReport>(storage.pool, CLOSED_PRS, [after, since, limit]),
    reportOfPr: (appId, prUrl) => one<PrReport>(storage.pool, REPORT_OF_PR, [appId, prUrl]),
    queueReview: (appId, delivery, review) =>
      tx(async (t) => {
        const now = clock.now()
        if (!(await rememberAll(t, appId, delivery, now))) return { outcome: 'replayed' as const }
        await exec(t.client, FORGET, [appId, now - GIT_DELIVERY_RETENTION_MS])
        const { report } = review
        await exec(t.client, LOCK_REPORT, [report.id])
        const waiting = (await one<{ n: number }>(t.client, PENDING_COUNT, [report.id]))!.n
        if (waiting >= PENDING_REVIEWS_MAX) return { outcome: 'review_refused' as const, reason: pendingFull(waiting) }
        await exec(t.client, INSERT_PENDING, [review.id, report.orgId, report.appId, report.id, report.prUrl, review.text, review.author, now])
        await side.enqueue(t, 'review', { feedbackId: report.id })
        return { outcome: 'review_queued' as const, position: waiting + 1 }
      }),
    receive: (appId, delivery, apply) =>
      tx(async (t) => {
        const now = clock.now()
        if (!(await rememberAll(t, appId, delivery, now))) return { outcome: 'replayed' as const }
        await exec(t.client, FORGET, [appId, now - GIT_DELIVERY_RETENTION_MS])
        if (!apply) return { outcome: 'unchanged' as const }
        const { report, change } = apply
        const moved = await runPg(t, changes.apply(report, change, now))
        if (moved) return { outcome: 'moved' as const, moved }
        // Its review iteration is running: the news waits for the run's end (src/db/pg/agent-runs.ts).
        return (await runPg(t, changes.defer(report, change, now))) ? { outcome: 'deferred' as const } : { outcome: 'unchanged' as const }
      }),
  }
}
