/**
 * The `process` job: takes one report from `received` through `sanitizing` to `sanitized`, clusters it
 * with its near-duplicates, then routes a lead to `awaiting_manual` (manual mode) or `queued` (auto_pr
 * mode) — at once, or when the App's batch window closes. A duplicate takes no further steps of its own.
 * Every move goes through the lifecycle (FSM check, compare-and-set, event, follow-up job), and the job
 * reads the current status first, so a retry after a crash continues from wherever the last run stopped.
 * Only sanitized values are kept: the sanitizing step overwrites every free-text field in place.
 */
import type { Clock } from '../../core/clock'
import { canSystemMove } from '../../core/fsm'
import type { JobRow } from '../../lifecycle/jobs-repo'
import { DeferJob, type JobStep } from '../loop'
import type { ClusterService } from '../../dedup/service'
import { clusteringInput, createSanitizeMoves, prescrub, scrubbedFor, StaleScrub, type Prescrubbed, type Scrubbed } from './sanitize-report'
import type { ProcessRow, SyncProcessingSide } from '../../modules/feedback/processing-repo'
import { statusAfterSanitize } from '../../lifecycle/lifecycle'
import type { BatchWindows } from './release-batch'

export interface ProcessDeps {
  cluster: ClusterService
  batches: BatchWindows
  /** Deletes the job row: called inside the step's transaction, so the job goes with the report's changes. */
  finishJob?: (jobId: number) => void
  /** Reports processed per transaction by `runBatch` at most (default DEFAULT_BATCH_SIZE). */
  batchSize?: number
  /**
   * How long one batch may hold the write lock (default DEFAULT_BATCH_BUDGET_MS): no report starts after
   * it; the jobs left are handed back untouched (not a failure) and the next batch is sized to fit.
   */
  batchBudgetMs?: number
  /**
   * True while another writer waits for the write lock (the HTTP thread's intake: db/sqlite/write-turns.ts): a
   * batch then starts no more reports and commits, so intake waits for one report, not the whole batch.
   */
  yieldWhen?: () => boolean
  /**
   * False while batches should not start (intake active recently): the step then asks for one job at a
   * time. A burst's short gaps (a client reconnecting) do not start a batch that intake would wait for.
   */
  mayBatch?: () => boolean
}

/**
 * Reports per batch: the commit, the claim and each touched lead's summary are paid once per batch.
 * Batches run only while intake is quiet (loop.ts); the time budget bounds how long one holds the lock.
 */
export const DEFAULT_BATCH_SIZE = 512
export const DEFAULT_BATCH_BUDGET_MS = 200

/** How often a single job sanitizes again outside the lock when its row changed in between. */
const STALE_RETRIES = 3

/** A report of a batch, computed before the batch takes the write lock (see `runBatch`). */
interface Plan {
  /** The row as read then: written only if it is still at this version and status. */
  row: ProcessRow
  /** Its sanitized columns, when it was not sanitized yet. */
  scrubbed: Scrubbed | undefined
  verdict: { leadId: string | null; reason: string }
}

/** The `process` step on SQLite: synchronous transactions, batches, write turns (see docs/architecture.md). */
export function createProcessFeedbackStep(repo: SyncProcessingSide, clock: Clock, deps: ProcessDeps): JobStep {
  const maxBatch = Math.max(1, deps.batchSize ?? DEFAULT_BATCH_SIZE)
  const budgetMs = deps.batchBudgetMs ?? DEFAULT_BATCH_BUDGET_MS
  /** Milliseconds per report in recent batches (a moving average): sizes the next batch to the budget. */
  let msPerReport = 0.5

  const { moveTo, sanitizeRow, toSanitized } = createSanitizeMoves(repo, clock)

  /** A sanitized report that is a lead after clustering goes on: to a human or the agent queue, now or when its App's batch window closes. */
  function route(row: ProcessRow): void {
    const app = repo.routing(row.app_id)
    if (app?.batchEnabled) {
      // Waits in `sanitized` until the window closes; the batch_release job moves it on.
      repo.ensureWindow(row.app_id, deps.batches.closesAt(app.batchWindowHours))
      return
    }
    moveTo(row, statusAfterSanitize(app ?? { processingMode: 'manual' }))
  }

  /**
   * A batch's first half, without the write lock (batches only): the report as read now, sanitized in
   * memory when it is not yet, and its cluster verdict. `plan` null: no verdict to compute ahead (gone, a
   * duplicate, archived...): `advance` handles it under the lock, with `pre` (its sanitized columns).
   */
  function planOf(feedbackId: string): { plan: Plan | null; pre: Prescrubbed | undefined } {
    const row = repo.get(feedbackId)
    // Sanitized now, outside the lock, whatever happens to it next (a duplicate or an archived report
    // is scrubbed too, under the lock only written).
    const pre = prescrub(row)
    if (!row || row.duplicate_of_id) return { plan: null, pre }
    if (row.status !== 'received' && row.status !== 'sanitizing' && row.status !== 'sanitized') return { plan: null, pre }
    const { scrubbed, sanitized } = clusteringInput(row, pre)
    const verdict = deps.cluster.plan(feedbackId, sanitized)
    return { plan: verdict && { row, scrubbed, verdict }, pre }
  }

  /**
   * A batch's second half, under the write lock: writes the plan if the row is still as it was read;
   * otherwise (moved or changed meanwhile) the plan is dropped and the report advanced from scratch.
   */
  function applyPlan(feedbackId: string, plan: Plan | null, pre: Prescrubbed | undefined): void {
    const now = plan && repo.get(feedbackId)
    if (!plan || !now || now.version !== plan.row.version || now.status !== plan.row.status || now.duplicate_of_id) {
      if (plan) deps.cluster.dropPlan(feedbackId, plan.row.app_id)
      return advance(feedbackId, pre)
    }
    // The plan's sanitized columns, if they were computed from what the row still holds.
    const row = plan.scrubbed ? toSanitized(now, scrubbedFor(now, pre)) : now
    if (!deps.cluster.applyPlan(feedbackId, row.app_id, plan.verdict).leadId) route(row)
    // Already `sanitized` before its job (sanitized ahead by an earlier version, or queued again):
    // processedAt says the verdict is in; one that has it keeps it.
    if (!plan.scrubbed) repo.markProcessed(feedbackId, clock.now())
  }

  /**
   * Takes the report as far as it can go now; runs inside one transaction. The row is read once: each
   * move of this step keeps it up to date (status, version), as the write lock keeps everyone else out.
   * It never sanitizes: `pre` holds the row's sanitized columns, computed before the transaction; a row
   * that changed since throws StaleScrub (nothing written, the caller sanitizes again outside the lock).
   */
  function advance(feedbackId: string, pre: Prescrubbed | undefined): void {
    let row = repo.get(feedbackId)
    /** Sanitized by this step (processed_at stamped with it), not ahead of it. */
    let sanitizedHere = false
    for (let step = 0; step < 4; step++) {
      if (!row) return
      if (row.duplicate_of_id) {
        // A duplicate takes no steps of its own, but raw values are never kept (triage refuses to
        // merge a raw report; one a version before 0006 merged raw is scrubbed here). One sanitized ahead and
        // merged by hand before it was clustered is done now.
        if (row.redactions === null) sanitizeRow(row, false, scrubbedFor(row, pre))
        else repo.markProcessed(row.id, clock.now())
        return
      }
      switch (row.status) {
        case 'received':
        case 'sanitizing':
          // Often done already by the sanitize-ahead thread (../sanitize-ahead.ts) during a backlog.
          row = toSanitized(row, scrubbedFor(row, pre))
          sanitizedHere = true
          continue
        case 'sanitized': {
          // Idempotent: a retry finds the report already clustered and only re-indexes it.
          if (!deps.cluster.clusterReport(row.id).leadId) route(row)
          // Already `sanitized` before this job (sanitized ahead by an earlier version, or queued again):
          // processedAt says the verdict is in; one that has it keeps it.
          if (!sanitizedHere) repo.markProcessed(row.id, clock.now())
          return
        }
        default:
          // Archived (or moved on by someone else) while waiting: no more lifecycle steps, but raw
          // values are never kept — a report that was never sanitized is scrubbed where it stands.
          if (row.redactions === null) sanitizeRow(row, false, scrubbedFor(row, pre))
          return
      }
    }
  }

  return {
    async run(job: JobRow): Promise<void> {
      if (!job.feedback_id) {
        deps.finishJob?.(job.id)
        return
      }
      const first = repo.get(job.feedback_id)
      // A large App's similarity index is built in slices, before the synchronous steps below.
      if (first) await deps.cluster.prepare(first.app_id)
      // Every step of one report commits once, together: one WAL commit instead of four, and a crash
      // rolls the report back to where it was, to be redone from there. IMMEDIATE: it reads before it
      // writes, and another process's write in between would otherwise fail it instead of waiting.
      const feedbackId = job.feedback_id
      for (let attempt = 1; ; attempt++) {
        // Sanitized here, before the transaction: the write lock is held for the writes only.
        const pre = prescrub(attempt === 1 ? first : repo.get(feedbackId))
        try {
          repo.transaction(() => {
            advance(feedbackId, pre)
            // The job is done exactly when these changes commit; a throw above keeps it for a retry.
            deps.finishJob?.(job.id)
          })
          return
        } catch (e) {
          // The row's raw columns changed between the read and the lock (nothing in fixloop rewrites raw
          // text; a status move does not count): sanitize it again.
          if (!(e instanceof StaleScrub)) throw e
          if (attempt >= STALE_RETRIES) throw new DeferJob(0, e.message, job.run_after)
        }
      }
    },
    /**
     * Many reports in ONE transaction (one commit), each in its own savepoint: a report that fails rolls
     * back to where it was and fails alone (retried later), the others commit. Each report's job is
     * deleted in its savepoint, so a kill -9 at any point leaves every report either fully before or
     * fully after its step, with its job still there when before. Lead summaries are rebuilt once per
     * batch (cluster.batch), not after every attachment.
     */
    async runBatch(jobs: JobRow[]): Promise<unknown[]> {
      const appIds = new Set<string>()
      for (const job of jobs) {
        const appId = job.feedback_id ? repo.appOf(job.feedback_id) : null
        if (appId) appIds.add(appId)
      }
      // A large App's similarity index is built in slices, before the synchronous batch below.
      for (const appId of appIds) await deps.cluster.prepare(appId)
      const outcomes: unknown[] = jobs.map(() => undefined)
      let started = 0
      const t0 = performance.now()
      const handBack = (i: number) => {
        // Handed back where it was in the queue: the next batch starts with it.
        outcomes[i] = new DeferJob(0, 'the batch gave the write lock back early', jobs[i].run_after)
      }
      deps.cluster.withPlans(() => {
        // First half, without the write lock: sanitize and cluster each report in memory, in queue order
        // (each is indexed at once, so the next ones rank against it). The other writers (intake, the
        // sanitize-ahead thread) write meanwhile; this thread's CPU and theirs overlap.
        const plans = jobs.map((job, i): { plan: Plan | null; pre: Prescrubbed | undefined } | undefined => {
          if (started > 0 && (performance.now() - t0 > budgetMs || deps.yieldWhen?.())) {
            handBack(i)
            return undefined
          }
          started++
          try {
            return job.feedback_id ? planOf(job.feedback_id) : { plan: null, pre: undefined }
          } catch (e) {
            outcomes[i] = e ?? new Error('processing failed')
            return undefined
          }
        })
        // Second half, under the write lock: the plans written in one transaction, a savepoint each. It
        // holds the lock for the writes only; if intake wants it meanwhile, the rest waits for a next batch.
        let applied = 0
        repo.transaction(() => {
          deps.cluster.batch(() => {
            jobs.forEach((job, i) => {
              if (plans[i] === undefined) return
              const { plan, pre } = plans[i]
              if (applied++ > 0 && deps.yieldWhen?.()) {
                if (plan && job.feedback_id) deps.cluster.dropPlan(job.feedback_id, plan.row.app_id)
                handBack(i)
                return
              }
              try {
                // A savepoint inside the batch's transaction.
                repo.transaction(
                  () =>
                    deps.cluster.batchItem(() => {
                      if (job.feedback_id) applyPlan(job.feedback_id, plan, pre)
                      deps.finishJob?.(job.id)
                    }),
                  true,
                )
              } catch (e) {
                if (plan && job.feedback_id) deps.cluster.dropPlan(job.feedback_id, plan.row.app_id)
                // Changed since it was sanitized: not a failure, the next batch sanitizes it again.
                if (e instanceof StaleScrub) handBack(i)
                else outcomes[i] = e ?? new Error('processing failed')
              }
            })
          })
        })
      })
      if (started > 0) msPerReport = 0.7 * msPerReport + 0.3 * ((performance.now() - t0) / started)
      return outcomes
    },
    get batchSize() {
      if (deps.mayBatch && !deps.mayBatch()) return 1
      return Math.max(1, Math.min(maxBatch, Math.floor(budgetMs / Math.max(msPerReport, 0.01))))
    },
    get finishesJob() {
      return deps.finishJob !== undefined
    },
    onGiveUp(job: JobRow, error: string): void {
      if (!job.feedback_id) return
      const row = repo.get(job.feedback_id)
      if (row && canSystemMove(row.status, 'failed')) repo.fail(row.id, row.version, `processing failed: ${error}`)
    },
  }
}
