/**
 * The only SQLite SQL that writes a report's `status` or inserts a job. Everything else reaches these
 * statements through the lifecycle (lifecycle.ts beside it), which checks the FSM and records the event.
 */
import type { Database, Statement } from 'bun:sqlite'
import type { JobKind } from '../../lifecycle/jobs'
import type { FeedbackState, SanitizedWrite, StatusWrite } from '../../lifecycle/rules'

export type { FeedbackState, StatusWrite, ScrubbedColumns, SanitizedWrite } from '../../lifecycle/rules'

export function createLifecycleRepo(sqlite: Database) {
  const state: Statement = sqlite.query('SELECT id, org_id AS orgId, app_id AS appId, status, version FROM feedback WHERE id = ?')
  const setStatus: Statement = sqlite.query(
    `UPDATE feedback SET status = $to, version = version + 1, updated_at = $now,
       failure_reason = CASE WHEN $keepReason THEN failure_reason ELSE $reason END,
       merge_request_url = CASE WHEN $keepUrl THEN merge_request_url ELSE $url END
     WHERE id = $id AND version = $version`,
  )
  // received|sanitizing → sanitized with the scrubbed columns in one write: two moves (a version each) and
  // the overwrite that sanitizing is (no version of its own), as three statements did.
  const setSanitized: Statement = sqlite.query(
    `UPDATE feedback SET status = 'sanitized', version = version + $moves, updated_at = $now, processed_at = $now, failure_reason = NULL,
       text = $text, url = $url, user_agent = $userAgent, console_logs = $consoleLogs, metadata = $metadata,
       component_target = $componentTarget, redactions = $redactions
     WHERE id = $id AND version = $version`,
  )
  const insertJob: Statement = sqlite.query('INSERT INTO jobs (kind, feedback_id, app_id, run_after, created_at) VALUES (?, ?, ?, ?, ?)')
  // Reports that waited in `queued` for a repository (no agent job of their own left).
  const insertWaitingRuns: Statement = sqlite.query(
    `INSERT INTO jobs (kind, feedback_id, run_after, created_at)
     SELECT 'agent', f.id, ?1, ?1 FROM feedback f
     WHERE f.app_id = ?2 AND f.status = 'queued' AND f.duplicate_of_id IS NULL
       AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.kind = 'agent' AND j.feedback_id = f.id)`,
  )

  return {
    state: (id: string): FeedbackState | null => state.get(id) as FeedbackState | null,
    /** Compare-and-set on the row's version: false when another writer changed the row first. */
    setStatus(w: StatusWrite): boolean {
      return (
        setStatus.run({
          id: w.id,
          version: w.version,
          to: w.to,
          now: w.now,
          keepReason: w.failureReason === undefined ? 1 : 0,
          reason: w.failureReason ?? null,
          keepUrl: w.mergeRequestUrl === undefined ? 1 : 0,
          url: w.mergeRequestUrl ?? null,
        }).changes === 1
      )
    },
    /** Compare-and-set on the row's version: false when another writer changed the row first. */
    setSanitized(w: SanitizedWrite): boolean {
      const { columns: c } = w
      return (
        setSanitized.run({
          id: w.id,
          version: w.version,
          moves: w.moves,
          now: w.now,
          text: c.text,
          url: c.url,
          userAgent: c.userAgent,
          consoleLogs: c.consoleLogs,
          metadata: c.metadata,
          componentTarget: c.componentTarget,
          redactions: w.redactions,
        }).changes === 1
      )
    },
    insertJob: (kind: JobKind, feedbackId: string | null, appId: string | null, runAfter: number, now: number) =>
      insertJob.run(kind, feedbackId, appId, runAfter, now),
    insertWaitingRuns: (appId: string, now: number): number => insertWaitingRuns.run(now, appId).changes,
  }
}
