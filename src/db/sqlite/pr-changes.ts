/**
 * SQLite side of applying a pull/merge request's news (modules/git-hooks/repo.ts `receive`): the moves and
 * events of merged/closed/reopened, and the news held back while a run of the report is in progress
 * (deferred_pr_changes). Synchronous, in the caller's transaction: the webhook's delivery and the end of
 * an agent run (src/db/sqlite/agent-runs.ts) share it, so both make the same moves through the lifecycle.
 */
import type { Database, Statement } from 'bun:sqlite'
import { CHANGE_MOVES, CLOSED_PR_POLL_MS, type PrChange, type PrReport } from '../../modules/git-hooks/repo'
import type { SqliteLifecycle } from './lifecycle'
import { createSqliteResolutions } from './resolutions'

export function createSqlitePrChanges(sqlite: Database, side: SqliteLifecycle) {
  const resolutions = createSqliteResolutions(sqlite, side)
  const rememberClose: Statement = sqlite.query(
    'INSERT INTO closed_pull_requests (feedback_id, app_id, pr_url, closed_at) VALUES (?, ?, ?, ?) ON CONFLICT (feedback_id) DO UPDATE SET app_id = excluded.app_id, pr_url = excluded.pr_url, closed_at = excluded.closed_at',
  )
  const forgetClose: Statement = sqlite.query('DELETE FROM closed_pull_requests WHERE feedback_id = ?')
  const pruneCloses: Statement = sqlite.query('DELETE FROM closed_pull_requests WHERE closed_at < ?')
  const running: Statement = sqlite.query("SELECT 1 FROM feedback WHERE id = ? AND status = 'agent_running' AND duplicate_of_id IS NULL AND merge_request_url = ?")
  // A merge is never overwritten by a later close (a host may send both); a close by a merge is.
  const deferChange: Statement = sqlite.query(
    `INSERT INTO deferred_pr_changes (feedback_id, app_id, pr_url, change, received_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (feedback_id) DO UPDATE SET app_id = excluded.app_id, pr_url = excluded.pr_url, change = excluded.change, received_at = excluded.received_at
     WHERE deferred_pr_changes.change <> 'merged' OR deferred_pr_changes.pr_url <> excluded.pr_url`,
  )
  const cancelClose: Statement = sqlite.query("DELETE FROM deferred_pr_changes WHERE feedback_id = ? AND pr_url = ? AND change = 'closed'")
  const takeDeferred: Statement = sqlite.query('DELETE FROM deferred_pr_changes WHERE feedback_id = ? RETURNING pr_url, change')
  const lead: Statement = sqlite.query('SELECT id, org_id AS orgId, app_id AS appId, status, merge_request_url AS prUrl FROM feedback WHERE id = ? AND duplicate_of_id IS NULL')

  /**
   * Applies `change` to the lead `report`: the moved report ids (the lead first, then the duplicates that
   * followed it), or null when the report is not in the status the change applies to.
   */
  function apply(report: PrReport, change: PrChange, now: number): string[] | null {
    const { from, to } = CHANGE_MOVES[change]
    if (!side.move(sqlite, report.id, to, { by: 'system', from, prUrl: report.prUrl })) return null
    const moved = [report.id]
    pruneCloses.run(now - CLOSED_PR_POLL_MS)
    if (change === 'closed') rememberClose.run(report.id, report.appId, report.prUrl, now)
    else forgetClose.run(report.id)
    if (change === 'merged') moved.push(...resolutions.followLead(report))
    return moved
  }

  /**
   * A change for a lead whose run is in progress (`agent_running` on this very request): held in
   * deferred_pr_changes for the run's end (`applyDeferred`). A reopen cancels a held close. False when
   * the report is not running on this request (nothing held).
   */
  function defer(report: PrReport, change: PrChange, now: number): boolean {
    if (running.get(report.id, report.prUrl) === null) return false
    if (change === 'reopened') return cancelClose.run(report.id, report.prUrl).changes > 0
    deferChange.run(report.id, report.appId, report.prUrl, change, now)
    return true
  }

  /**
   * At a run's end, after its own move: the news held for the report is taken and applied, if the report
   * still waits on that request (otherwise dropped: its run failed, or opened another request). The moved
   * ids, or null.
   */
  function applyDeferred(feedbackId: string, now: number): string[] | null {
    const held = takeDeferred.get(feedbackId) as { pr_url: string; change: PrChange } | null
    if (!held) return null
    const report = lead.get(feedbackId) as PrReport | null
    if (!report || report.prUrl !== held.pr_url) return null
    return apply(report, held.change, now)
  }

  return { apply, defer, applyDeferred }
}
export type SqlitePrChanges = ReturnType<typeof createSqlitePrChanges>
