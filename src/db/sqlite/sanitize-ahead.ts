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
import type { ScrubbedColumns } from '../../lifecycle/rules'

/** A `received` report with its queued `process` job's id. */
export type QueuedReport = ProcessRow & { job_id: number }

export function createSqliteSanitizeAhead(sqlite: Database) {
  const head: Statement = sqlite.query("SELECT id FROM jobs WHERE +kind = 'process' ORDER BY id LIMIT 1")
  // The rowid's end: one b-tree step, whatever the queue holds.
  const tail: Statement = sqlite.query('SELECT max(id) AS id FROM jobs')
  const after: Statement = sqlite.query(
    `SELECT j.id AS job_id, f.id, f.app_id, f.status, f.version, f.text, f.url, f.user_agent, f.console_logs, f.metadata,
       f.component_target, f.email, f.submitter_name, f.external_user_id, f.duplicate_of_id, f.redactions
     FROM jobs j JOIN feedback f ON f.id = j.feedback_id
     WHERE +j.kind = 'process' AND j.id > ?1 AND j.id <= ?4 AND (j.lease_until IS NULL OR j.lease_until < ?2)
       AND f.status = 'received' AND f.duplicate_of_id IS NULL AND f.redactions IS NULL
     ORDER BY j.id LIMIT ?3`,
  )
  // Scrubbed in place: status, version and processed_at are the process job's, which moves the report to
  // `sanitized` with its verdict (src/worker/sanitize-ahead.ts). The version is compared, not bumped: the
  // job's own sanitizing compares the columns it read (StaleScrub), so it never writes over these.
  const scrubInPlace: Statement = sqlite.query(
    `UPDATE feedback SET text = ?3, url = ?4, user_agent = ?5, console_logs = ?6, metadata = ?7, component_target = ?8, redactions = ?9
     WHERE id = ?1 AND version = ?2 AND status = 'received' AND redactions IS NULL`,
  )
  return {
    /** The oldest queued `process` job's id: where the processing thread works next. */
    firstProcessJob: (): number | undefined => (head.get() as { id: number } | null)?.id,
    /** The newest queued job's id, of any kind (at least the newest `process` job's): undefined when none waits. */
    lastJob: (): number | undefined => (tail.get() as { id: number | null } | null)?.id ?? undefined,
    /** Up to `limit` raw reports whose `process` job comes after `jobId` (up to `lastJobId`) and is not leased, in queue order. */
    receivedAfter: (jobId: number, lastJobId: number, now: number, limit: number): QueuedReport[] => after.all(jobId, now, limit, lastJobId) as QueuedReport[],
    /**
     * Writes a chunk's sanitized columns in one short transaction, each report with a compare-and-set on
     * the version it was read at (still `received`, still raw); returns how many were written.
     */
    writeSanitized(rows: { id: string; version: number; columns: ScrubbedColumns; redactions: string }[]): number {
      return sqlite
        .transaction(() => {
          let done = 0
          for (const { id, version, columns: c, redactions } of rows) {
            done += scrubInPlace.run(id, version, c.text, c.url, c.userAgent, c.consoleLogs, c.metadata, c.componentTarget, redactions).changes
          }
          return done
        })
        .immediate()
    },
  }
}
export type SqliteSanitizeAhead = ReturnType<typeof createSqliteSanitizeAhead>
