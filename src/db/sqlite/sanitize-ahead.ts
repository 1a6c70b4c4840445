/**
 * The SQLite side of the sanitize-ahead thread (src/worker/sanitize-ahead.ts; the port:
 * src/worker/sanitize-ahead-repo.ts; SQLite only: on PostgreSQL no thread sanitizes ahead). Its reads: where the processing thread's queue starts,
 * and the next chunk of `received` reports with a queued `process` job after a job id. Job ids are
 * AUTOINCREMENT (never reused), so "after the last chunk" is an id range. `+kind` keeps SQLite on the
 * primary key (a range, in order) instead of the kind index, through which it read and sorted every
 * `process` job per chunk (test/perf-plans.test.ts).
 */
import type { Database, Statement } from 'bun:sqlite'
import type { ProcessRow } from '../../modules/feedback/processing-repo'
import type { SqliteLifecycle } from './lifecycle'
import type { ScrubbedColumns } from '../../lifecycle/rules'

/** A `received` report with its queued `process` job's id. */
export type QueuedReport = ProcessRow & { job_id: number }

export function createSqliteSanitizeAhead(sqlite: Database, lifecycle?: SqliteLifecycle) {
  const head: Statement = sqlite.query("SELECT id FROM jobs WHERE +kind = 'process' ORDER BY id LIMIT 1")
  const after: Statement = sqlite.query(
    `SELECT j.id AS job_id, f.id, f.app_id, f.status, f.version, f.text, f.url, f.user_agent, f.console_logs, f.metadata,
       f.component_target, f.email, f.submitter_name, f.external_user_id, f.duplicate_of_id, f.redactions
     FROM jobs j JOIN feedback f ON f.id = j.feedback_id
     WHERE +j.kind = 'process' AND j.id > ?1 AND j.id <= ?4 AND (j.lease_until IS NULL OR j.lease_until < ?2)
       AND f.status = 'received' AND f.duplicate_of_id IS NULL
     ORDER BY j.id LIMIT ?3`,
  )
  return {
    /** The oldest queued `process` job's id: where the processing thread works next. */
    firstProcessJob: (): number | undefined => (head.get() as { id: number } | null)?.id,
    /** Up to `limit` raw reports whose `process` job comes after `jobId` (up to `lastJobId`) and is not leased, in queue order. */
    receivedAfter: (jobId: number, lastJobId: number, now: number, limit: number): QueuedReport[] => after.all(jobId, now, limit, lastJobId) as QueuedReport[],
    /**
     * Writes a chunk in one short transaction, each report with a compare-and-set on the version it was
     * read at (lifecycle.moveToSanitized, the `process` job's own write, without processed_at: the job
     * stamps it when it clusters the report); returns how many were written.
     */
    writeSanitized(rows: { id: string; version: number; columns: ScrubbedColumns; redactions: string }[]): number {
      if (!lifecycle) throw new Error('this sanitize-ahead repo writes nothing: build it with the lifecycle\'s SQLite side')
      const lc = lifecycle
      return sqlite
        .transaction(() => {
          let done = 0
          for (const r of rows) if (lc.moveToSanitized(sqlite, r.id, r.version, r.columns, r.redactions, false)) done++
          return done
        })
        .immediate()
    },
  }
}
export type SqliteSanitizeAhead = ReturnType<typeof createSqliteSanitizeAhead>
