/**
 * Sanitize ahead: during a backlog, a second thread sanitizes reports the processing thread has not
 * reached yet, so that thread only clusters and routes them. Sanitizing needs no shared state (no
 * similarity index, no order), so it runs in parallel on another core: after a burst the HTTP thread's
 * core is idle, and the drain uses both.
 *
 * - It works oldest first, `HEAD_GAP` jobs ahead of the processing thread (which goes oldest first too):
 *   the reports that thread reaches next are already sanitized, the two do not collide on one report,
 *   and a trickle of reports (a backlog shorter than the gap) is never touched here.
 * - A chunk is read and sanitized outside any transaction, then written in one short transaction, each
 *   report with a compare-and-set on the version it was read at: a row that changed meanwhile (moved on
 *   by the processing thread, archived by a customer) is left alone. The others get their sanitized
 *   columns in place and stay `received` at the same version; each job stays in the queue and moves its
 *   report to `sanitized` (both events, processed_at) with its clustering verdict, in one commit, without
 *   sanitizing it again (steps/sanitize-report.ts `prescrub`). A client never sees `sanitized` or
 *   `processedAt` before the verdict (docs/api.md), and each report ends as if the job had sanitized it.
 * - Nothing here is required: if this thread is slow, stopped or crashed, the processing thread sanitizes
 *   every report itself, as it always did.
 */
import type { ProcessRow } from '../modules/feedback/processing-repo'
import type { ScrubbedColumns } from '../lifecycle/rules'
import type { Clock } from '../core/clock'
import { scrub } from './steps/sanitize-report'

/** The processing thread's next jobs, never taken here. */
export const HEAD_GAP = 1024
/**
 * How far past the gap it works: about two seconds of the processing thread's work. Further ahead it
 * would only take the write lock (~60 µs a report) from the reports that thread needs now.
 */
export const AHEAD_MAX = 4096
/** Reports read, sanitized and written per chunk: the write holds the lock ~60 µs a report (bench/README.md). */
export const CHUNK = 256

/** A report with a queued `process` job, as the sanitizer reads it. */
export type QueuedReport = ProcessRow & { job_id: number }

/**
 * The embedded store's queue as the sanitizer works it (the store's `sides.sanitizeAhead`,
 * src/db/sqlite/sanitize-ahead.ts): SQLite only, since on PostgreSQL there is no processing thread to
 * sanitize ahead of.
 */
export interface AheadQueue {
  /** The job id at the processing thread's head, or undefined when no `process` job waits. */
  firstProcessJob(): number | undefined
  receivedAfter(jobId: number, lastJobId: number, now: number, limit: number): QueuedReport[]
  /** The chunk's sanitized columns, each with a compare-and-set on its version; how many were written. */
  writeSanitized(rows: { id: string; version: number; columns: ScrubbedColumns; redactions: string }[]): number
}

/** `reach`: how far from the queue's head it works (tests make it small). */
export function createSanitizeAhead(queue: AheadQueue, clock: Clock, reach = { headGap: HEAD_GAP, aheadMax: AHEAD_MAX }) {

  /** The newest job examined: the next chunk starts after it (job ids only grow). */
  let cursor = 0

  return {
    /**
     * Sanitizes the next chunk of the backlog: `examined` reports were read (0: nothing to do ahead of
     * the processing thread now; `farAhead`: AHEAD_MAX past its gap already), `sanitized` of them written here.
     */
    chunk(): { examined: number; sanitized: number; farAhead: boolean } {
      const oldest = queue.firstProcessJob()
      if (oldest === undefined) return { examined: 0, sanitized: 0, farAhead: false }
      // Just ahead of the processing thread, so the reports it reaches next are the ones sanitized here;
      // when it has caught up, this thread jumps ahead of it again.
      const after = Math.max(cursor, oldest + reach.headGap - 1)
      const last = oldest + reach.headGap - 1 + reach.aheadMax
      if (after >= last) return { examined: 0, sanitized: 0, farAhead: true }
      const rows = queue.receivedAfter(after, last, clock.now(), CHUNK)
      if (rows.length === 0) return { examined: 0, sanitized: 0, farAhead: false }
      cursor = rows[rows.length - 1].job_id
      // The CPU work, outside the write lock.
      const scrubbed = rows.map((r) => scrub(r))
      // Compare-and-set on the version read: a report that changed meanwhile (the processing thread got
      // there, a customer archived it) is not written (moveToSanitized returns false).
      const done = queue.writeSanitized(rows.map((read, i) => ({ id: read.id, version: read.version, columns: scrubbed[i].columns, redactions: scrubbed[i].counts })))
      return { examined: rows.length, sanitized: done, farAhead: false }
    },
  }
}
export type SanitizeAhead = ReturnType<typeof createSanitizeAhead>
