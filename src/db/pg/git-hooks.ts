/** PostgreSQL side of modules/git-hooks/repo.ts: the same rows, moves and events as src/db/sqlite/git-hooks.ts. */
import type { Clock } from '../../core/clock'
import type { Lifecycle } from '../../lifecycle/lifecycle'
import { canFollowLead } from '../../core/fsm'
import { CHANGE_MOVES, CLOSED_PR_POLL_MS, GIT_DELIVERY_RETENTION_MS, PENDING_REVIEWS_MAX, pendingFull, resolvedUserId, type DuplicateRow, type GitHooksRepo, type PrReport } from '../../modules/git-hooks/repo'
import type { PgTx } from './lifecycle'
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
const REMEMBER_CLOSE =
  'INSERT INTO closed_pull_requests (feedback_id, app_id, pr_url, closed_at) VALUES ($1, $2, $3, $4) ON CONFLICT (feedback_id) DO UPDATE SET app_id = excluded.app_id, pr_url = excluded.pr_url, closed_at = excluded.closed_at'
const FORGET_CLOSE = 'DELETE FROM closed_pull_requests WHERE feedback_id = $1'
const PRUNE_CLOSES = 'DELETE FROM closed_pull_requests WHERE closed_at < $1'
const CLOSED_PRS = `SELECT f.id, f.org_id AS "orgId", f.app_id AS "appId", f.status, f.merge_request_url AS "prUrl"
       FROM closed_pull_requests c JOIN feedback f ON f.id = c.feedback_id
      WHERE c.feedback_id > $1 AND c.closed_at >= $2 AND f.status = 'awaiting_manual' AND f.duplicate_of_id IS NULL AND f.merge_request_url = c.pr_url
      ORDER BY c.feedback_id LIMIT $3`
const SUBMITTER = 'SELECT submitted_mode, external_user_id FROM feedback WHERE id = $1'
// FOR UPDATE: a duplicate unmerged or moved meanwhile waits for this delivery, then sees its result.
const DUPLICATES = 'SELECT id, status, submitted_mode, external_user_id FROM feedback WHERE duplicate_of_id = $1 ORDER BY id FOR UPDATE'

export function createPgGitHooksRepo(storage: PgStorage, lifecycle: Lifecycle, clock: Clock): GitHooksRepo {
  const side = lifecycle.pg
  if (!side) throw new Error('the git-hooks repository on PostgreSQL needs the lifecycle on PostgreSQL')
  const tx = <T>(work: (t: PgTx) => Promise<T>) => storage.tx((client, _db, onCommit) => work({ client, onCommit }))
  return {
    openPullRequests: async (afterRunId, limit) =>
      (await many<PrReport & { runId: string }>(storage.pool, OPEN_PRS, [afterRunId, limit])).map(({ runId, ...report }) => ({ runId, report })),
    closedPullRequests: (after, since, limit) => many<PrReport>(storage.pool, CLOSED_PRS, [after, since, limit]),
    reportOfPr: (appId, prUrl) => one<PrReport>(storage.pool, REPORT_OF_PR, [appId, prUrl]),
    queueReview: (appId, deliveryId, review) =>
      tx(async (t) => {
        const now = clock.now()
        if ((await exec(t.client, REMEMBER, [appId, deliveryId, now])) === 0) return { outcome: 'replayed' as const }
        await exec(t.client, FORGET, [appId, now - GIT_DELIVERY_RETENTION_MS])
        const { report } = review
        await exec(t.client, LOCK_REPORT, [report.id])
        const waiting = (await one<{ n: number }>(t.client, PENDING_COUNT, [report.id]))!.n
        if (waiting >= PENDING_REVIEWS_MAX) return { outcome: 'review_refused' as const, reason: pendingFull(waiting) }
        await exec(t.client, INSERT_PENDING, [review.id, report.orgId, report.appId, report.id, report.prUrl, review.text, review.author, now])
        await side.enqueue(t, 'review', { feedbackId: report.id })
        return { outcome: 'review_queued' as const, position: waiting + 1 }
      }),
    receive: (appId, deliveryId, apply) =>
      tx(async (t) => {
        const now = clock.now()
        if ((await exec(t.client, REMEMBER, [appId, deliveryId, now])) === 0) return { outcome: 'replayed' as const }
        await exec(t.client, FORGET, [appId, now - GIT_DELIVERY_RETENTION_MS])
        if (!apply) return { outcome: 'unchanged' as const }
        const { report, change } = apply
        const { from, to } = CHANGE_MOVES[change]
        if (!(await side.move(t, report.id, to, { by: 'system', from, prUrl: report.prUrl }))) return { outcome: 'unchanged' as const }
        const moved = [report.id]
        await exec(t.client, PRUNE_CLOSES, [now - CLOSED_PR_POLL_MS])
        if (change === 'closed') await exec(t.client, REMEMBER_CLOSE, [report.id, report.appId, report.prUrl, now])
        else await exec(t.client, FORGET_CLOSE, [report.id])
        if (change === 'merged') {
          const scope = { orgId: report.orgId, appId: report.appId }
          const resolved = (id: string, who: { submitted_mode: string; external_user_id: string | null }) =>
            side.record(t, scope, 'feedback.resolved', { feedbackId: id, leadFeedbackId: report.id, prUrl: report.prUrl, externalUserId: resolvedUserId(who) })
          await resolved(report.id, (await one<{ submitted_mode: string; external_user_id: string | null }>(t.client, SUBMITTER, [report.id]))!)
          for (const d of await many<DuplicateRow>(t.client, DUPLICATES, [report.id])) {
            if (!canFollowLead(d.status, 'resolved')) continue
            if (await side.move(t, d.id, 'resolved', { by: 'lead', from: d.status })) {
              moved.push(d.id)
              await resolved(d.id, d)
            }
          }
        }
        return { outcome: 'moved' as const, moved }
      }),
  }
}
