/**
 * PostgreSQL side of applying a pull/merge request's news: the same moves, events and held news as
 * src/db/sqlite/pr-changes.ts, in the caller's transaction (the webhook's delivery, the end of an agent run).
 */
import { CHANGE_MOVES, CLOSED_PR_POLL_MS, type PrChange, type PrReport } from '../../modules/git-hooks/repo'
import type { PgLifecycle, PgTx } from './lifecycle'
import { createPgResolutions } from './resolutions'
import { exec, one } from './storage'

const REMEMBER_CLOSE =
  'INSERT INTO closed_pull_requests (feedback_id, app_id, pr_url, closed_at) VALUES ($1, $2, $3, $4) ON CONFLICT (feedback_id) DO UPDATE SET app_id = excluded.app_id, pr_url = excluded.pr_url, closed_at = excluded.closed_at'
const FORGET_CLOSE = 'DELETE FROM closed_pull_requests WHERE feedback_id = $1'
const PRUNE_CLOSES = 'DELETE FROM closed_pull_requests WHERE closed_at < $1'
// FOR UPDATE: the run's end (its move locks this row first) waits for the held news to commit, then takes it;
// or the delivery waits for the run's end and finds the report no longer running.
const RUNNING = "SELECT 1 FROM feedback WHERE id = $1 AND status = 'agent_running' AND duplicate_of_id IS NULL AND merge_request_url = $2 FOR UPDATE"
// A merge is never overwritten by a later close (a host may send both); a close by a merge is.
const DEFER = `INSERT INTO deferred_pr_changes (feedback_id, app_id, pr_url, change, received_at) VALUES ($1, $2, $3, $4, $5)
  ON CONFLICT (feedback_id) DO UPDATE SET app_id = excluded.app_id, pr_url = excluded.pr_url, change = excluded.change, received_at = excluded.received_at
  WHERE deferred_pr_changes.change <> 'merged' OR deferred_pr_changes.pr_url <> excluded.pr_url`
const CANCEL_CLOSE = "DELETE FROM deferred_pr_changes WHERE feedback_id = $1 AND pr_url = $2 AND change = 'closed'"
const TAKE_DEFERRED = 'DELETE FROM deferred_pr_changes WHERE feedback_id = $1 RETURNING pr_url, change'
const LEAD = 'SELECT id, org_id AS "orgId", app_id AS "appId", status, merge_request_url AS "prUrl" FROM feedback WHERE id = $1 AND duplicate_of_id IS NULL'

export function createPgPrChanges(side: PgLifecycle) {
  const resolutions = createPgResolutions(side)

  /** As src/db/sqlite/pr-changes.ts `apply`. */
  async function apply(t: PgTx, report: PrReport, change: PrChange, now: number): Promise<string[] | null> {
    const { from, to } = CHANGE_MOVES[change]
    if (!(await side.move(t, report.id, to, { by: 'system', from, prUrl: report.prUrl }))) return null
    const moved = [report.id]
    await exec(t.client, PRUNE_CLOSES, [now - CLOSED_PR_POLL_MS])
    if (change === 'closed') await exec(t.client, REMEMBER_CLOSE, [report.id, report.appId, report.prUrl, now])
    else await exec(t.client, FORGET_CLOSE, [report.id])
    if (change === 'merged') moved.push(...(await resolutions.followLead(t, report)))
    return moved
  }

  /** As src/db/sqlite/pr-changes.ts `defer`. */
  async function defer(t: PgTx, report: PrReport, change: PrChange, now: number): Promise<boolean> {
    if ((await one(t.client, RUNNING, [report.id, report.prUrl])) === undefined) return false
    if (change === 'reopened') return (await exec(t.client, CANCEL_CLOSE, [report.id, report.prUrl])) > 0
    await exec(t.client, DEFER, [report.id, report.appId, report.prUrl, change, now])
    return true
  }

  /** As src/db/sqlite/pr-changes.ts `applyDeferred`. */
  async function applyDeferred(t: PgTx, feedbackId: string, now: number): Promise<string[] | null> {
    const held = await one<{ pr_url: string; change: PrChange }>(t.client, TAKE_DEFERRED, [feedbackId])
    if (!held) return null
    const report = await one<PrReport>(t.client, LEAD, [feedbackId])
    if (!report || report.prUrl !== held.pr_url) return null
    return apply(t, report, held.change, now)
  }

  return { apply, defer, applyDeferred }
}
