/**
 * Sanitizing on any node (cluster mode, issue 38.2). Clustering needs one writer per App (the node holding
 * the App's partition keeps its similarity index: src/nodes/partitions.ts), but sanitizing a report needs
 * no shared state: every node that does not cluster all partitions sanitizes the reports queued past the
 * queue's next ones, so during a backlog the clustering nodes mostly cluster and route, and the cluster's
 * other cores take the sanitizer's work.
 *
 * - It starts `HEAD_GAP` jobs past the head of the `process` queue (the processing node works from the
 *   head), so the two rarely meet on one report; a trickle shorter than the gap is never touched here.
 * - A chunk of raw reports is taken `FOR UPDATE SKIP LOCKED` (two nodes never take one report, never wait
 *   on each other), sanitized, and written in the same short transaction with one statement per kind of
 *   write: each row gets its sanitized columns and redaction counts in place, still `received` at the
 *   same version; the job stays queued, and moves its report to `sanitized` (both events, processed_at)
 *   with its clustering verdict in one commit, without sanitizing it again (sanitize-report.ts
 *   `prescrub`). So `sanitized` and `processedAt` are only ever seen with the verdict.
 * - Nothing here is required: if no other node runs, or this one stops or dies mid-chunk (its transaction
 *   rolls back), the processing node sanitizes every report itself, as it always did.
 * The embedded mode has its own (a second thread, src/worker/sanitize-ahead.ts): one process, one file.
 */
import type { Clock } from '../core/clock'
import type { Logger } from '../core/logger'
import type { ProcessedWrite, TxProcessingSide, TxSanitizeAheadSide } from '../modules/feedback/processing-repo'
import { scrub } from './steps/sanitize-report'
import { failureLog, type FailureLog } from '../db/outage-log'

/** The processing node's next jobs, never taken here. */
export const ANYWHERE_HEAD_GAP = 512
/** Reports per chunk: sanitized while their rows are locked (about 0.3 ms each: ~80 ms a chunk). */
export const ANYWHERE_CHUNK = 256

export interface SanitizeAnywhereOptions {
  /** True while this node should sanitize ahead (it does not cluster every partition of Apps, and workers run). */
  active: () => boolean
  /**
   * True while this node's intake is busy (processing.ts `intakePacing`): it then sanitizes nothing, and
   * looks again `BUSY_RETRY_MS` later (a chunk holds this thread ~80 ms: submissions come first).
   */
  busy?: () => boolean
  pollMs?: number
  headGap?: number
  chunk?: number
}

/** How soon a pass that gave way to intake looks again. */
const BUSY_RETRY_MS = 100

export class SanitizeAnywhere<Tx> {
  private running = false
  private timer: ReturnType<typeof setTimeout> | undefined
  private current: Promise<void> | undefined
  private woken = false
  /** The last pass stopped for intake: look again soon. */
  private yielded = false
  /** Reports this node sanitized (a gauge of how the work spreads). */
  sanitized = 0

  constructor(
    private readonly queue: TxSanitizeAheadSide<Tx>,
    private readonly writes: Pick<TxProcessingSide<Tx>, 'transaction' | 'writeProcessed'>,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly opts: SanitizeAnywhereOptions,
  ) {
    this.failed = failureLog(log)
  }

  /** A pass failing because the database is away is logged once per 30 s, not every pass (db/outage-log.ts). */
  private readonly failed: FailureLog

  start(): void {
    if (this.running) return
    this.running = true
    this.schedule(0)
  }

  /** New `process` jobs were queued (here or on another node): look now instead of at the next poll. */
  wake(): void {
    this.woken = true
    if (this.running && !this.current) this.schedule(0)
  }

  async stop(): Promise<void> {
    this.running = false
    clearTimeout(this.timer)
    await this.current
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer)
    this.timer = setTimeout(() => {
      this.current = this.pass()
        .then(() => {})
        .catch((e) => this.failed('warn', 'sanitizing ahead failed; the processing node sanitizes these reports itself', e))
        .finally(() => {
          this.current = undefined
          if (this.running) this.schedule(this.woken && !this.yielded ? 0 : this.yielded ? BUSY_RETRY_MS : (this.opts.pollMs ?? 1000))
        })
    }, ms)
  }

  /** Chunks until the queue past the gap has no raw report left (or this node should stop); how many it sanitized. */
  async pass(): Promise<number> {
    this.woken = false
    this.yielded = false
    let done = 0
    if (this.opts.busy?.()) {
      this.yielded = true
      return 0
    }
    const start = await this.queue.headEnd(this.opts.headGap ?? ANYWHERE_HEAD_GAP)
    if (start === null) return 0
    let after = start
    while (this.running && this.opts.active()) {
      if (this.opts.busy?.()) {
        this.yielded = true
        break
      }
      const chunk = await this.chunk(after)
      if (chunk.last === null) break
      after = chunk.last
      done += chunk.written
    }
    this.sanitized += done
    return done
  }

  /** One chunk in one transaction: taken, sanitized, written. `last`: the last job id it looked at (null: none left). */
  async chunk(afterJobId: number): Promise<{ last: number | null; written: number }> {
    return this.writes.transaction(async (tx) => {
      const rows = await this.queue.claimRaw(tx, afterJobId, this.opts.chunk ?? ANYWHERE_CHUNK, this.clock.now())
      if (rows.length === 0) return { last: null, written: 0 }
      const reports: ProcessedWrite[] = []
      for (const row of rows) {
        let scrubbed
        try {
          scrubbed = scrub(row)
        } catch (e) {
          // Left to the processing node (which retries and, at last, fails the report with the cause).
          this.log.warn('a report could not be sanitized ahead', { feedbackId: row.id, error: e instanceof Error ? e.message : String(e) })
          continue
        }
        // Scrubbed in place: still `received`, same version, no event and no processed_at. The processing
        // node moves it to `sanitized` with its verdict, in one commit, without sanitizing it again.
        reports.push({ id: row.id, version: row.version, status: 'received', bump: 0, sanitized: { columns: scrubbed.columns, redactions: scrubbed.counts }, duplicate: null, suggestion: null })
      }
      const written = await this.writes.writeProcessed(tx, { reports, jobsDone: [], agentRuns: [], now: this.clock.now() })
      if (written !== reports.length) throw new Error(`sanitizing ahead wrote ${written} of its ${reports.length} locked rows`)
      return { last: rows[rows.length - 1].job_id, written }
    })
  }
}
