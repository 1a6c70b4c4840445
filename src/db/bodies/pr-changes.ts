/**
 * Applying a pull/merge request's news (modules/git-hooks/repo.ts `receive`), written once for both
 * dialects (src/db/tx-body.ts): the moves and events of merged/closed/reopened, and the news held back
 * while a run of the report is in progress (deferred_pr_changes). In the caller's transaction: the
 * webhook's delivery and the end of an agent run (the agent-runs repositories) share it, so both make the
 * same moves through the lifecycle.
 *
 * The moves are the lifecycle writer's own bodies (src/db/bodies/lifecycle.ts), composed with `yield*`,
 * rather than a step delegated to each dialect's side: then this file is the whole transaction, one text
 * that reads top to bottom, and no dialect code stands between it and the move.
 */
import { CHANGE_MOVES, CLOSED_PR_POLL_MS, type PrChange, type PrReport } from '../../modules/git-hooks/repo'
import { get, lockingRead, run, sql, type Body } from '../tx-body'
import type { LifecycleBodies } from './lifecycle'
import { resolutionBodies } from './resolutions'

const REMEMBER_CLOSE = sql(
  'INSERT INTO closed_pull_requests (feedback_id, app_id, pr_url, closed_at) VALUES (?, ?, ?, ?) ON CONFLICT (feedback_id) DO UPDATE SET app_id = excluded.app_id, pr_url = excluded.pr_url, closed_at = excluded.closed_at',
)
const FORGET_CLOSE = sql('DELETE FROM closed_pull_requests WHERE feedback_id = ?')
const PRUNE_CLOSES = sql('DELETE FROM closed_pull_requests WHERE closed_at < ?')
// Locked on PostgreSQL: the run's end (its move locks this row first) waits for the held news to commit,
// then takes it; or the delivery waits for the run's end and finds the report no longer running.
const RUNNING = lockingRead("SELECT 1 AS running FROM feedback WHERE id = ? AND status = 'agent_running' AND duplicate_of_id IS NULL AND merge_request_url = ?")
// A merge is never overwritten by a later close (a host may send both); a close by a merge is.
const DEFER = sql(
  `INSERT INTO deferred_pr_changes (feedback_id, app_id, pr_url, change, received_at) VALUES (?, ?, ?, ?, ?)
   ON CONFLICT (feedback_id) DO UPDATE SET app_id = excluded.app_id, pr_url = excluded.pr_url, change = excluded.change, received_at = excluded.received_at
   WHERE deferred_pr_changes.change <> 'merged' OR deferred_pr_changes.pr_url <> excluded.pr_url`,
)
const CANCEL_CLOSE = sql("DELETE FROM deferred_pr_changes WHERE feedback_id = ? AND pr_url = ? AND change = 'closed'")
const TAKE_DEFERRED = sql('DELETE FROM deferred_pr_changes WHERE feedback_id = ? RETURNING pr_url, change')
const LEAD = sql('SELECT id, org_id AS "orgId", app_id AS "appId", status, merge_request_url AS "prUrl" FROM feedback WHERE id = ? AND duplicate_of_id IS NULL')

export function prChangeBodies(lifecycle: LifecycleBodies) {
  const resolutions = resolutionBodies(lifecycle)

  /**
   * Applies `change` to the lead `report`: the moved report ids (the lead first, then the duplicates that
   * followed it), or null when the report is not in the status the change applies to.
   */
  function* apply(report: PrReport, change: PrChange, now: number): Body<string[] | null> {
    const { from, to } = CHANGE_MOVES[change]
    if (!(yield* lifecycle.move(report.id, to, { by: 'system', from, prUrl: report.prUrl }))) return null
    const moved = [report.id]
    yield* run(PRUNE_CLOSES, now - CLOSED_PR_POLL_MS)
    if (change === 'closed') yield* run(REMEMBER_CLOSE, report.id, report.appId, report.prUrl, now)
    else yield* run(FORGET_CLOSE, report.id)
    if (change === 'merged') moved.push(...(yield* resolutions.followLead(report)))
    return moved
  }

  /**
   * A change for a lead whose run is in progress (`agent_running` on this very request): held in
   * deferred_pr_changes for the run's end (`applyDeferred`). A reopen cancels a held close. False when
   * the report is not running on this request (nothing held).
   */
  function* defer(report: PrReport, change: PrChange, now: number): Body<boolean> {
    if ((yield* get(RUNNING, report.id, report.prUrl)) === undefined) return false
    if (change === 'reopened') return (yield* run(CANCEL_CLOSE, report.id, report.prUrl)) > 0
    yield* run(DEFER, report.id, report.appId, report.prUrl, change, now)
    return true
  }

  /**
   * At a run's end, after its own move: the news held for the report is taken and applied, if the report
   * still waits on that request (otherwise dropped: its run failed, or opened another request). The moved
   * ids, or null.
   */
  function* applyDeferred(feedbackId: string, now: number): Body<string[] | null> {
    const held = yield* get<{ pr_url: string; change: PrChange }>(TAKE_DEFERRED, feedbackId)
    if (!held) return null
    const report = yield* get<PrReport>(LEAD, feedbackId)
    if (!report || report.prUrl !== held.pr_url) return null
    return yield* apply(report, held.change, now)
  }

  return { apply, defer, applyDeferred, followLead: resolutions.followLead }
}
export type PrChangeBodies = ReturnType<typeof prChangeBodies>
