/**
 * The `process` job on PostgreSQL: the same way through a report's lifecycle as the SQLite step
 * (process-feedback.ts): `received` → `sanitized` (every free-text field overwritten), clustered with its
 * near-duplicates, then routed (awaiting_manual / queued, or waiting for the App's batch window); a
 * duplicate or a report moved on meanwhile is only scrubbed where it stands if it is still raw.
 *
 * Sanitizing and the cluster verdict are computed first, outside any transaction; then ONE transaction
 * writes everything (the sanitized move with compare-and-set on the version read, the cluster change
 * with its events, the route, the job's deletion). The row is locked `FOR UPDATE` there: if it is no
 * longer at the version the plan was computed from (a customer moved it, another node processed it), or
 * the planned lead can no longer take it, nothing is written and the report is planned again from its
 * new row. No batches here: one job, one transaction.
 */
import type { Clock } from '../../core/clock'
import type { PgClusterService } from '../../dedup/pg-service'
import { canSystemMove } from '../../core/fsm'
import type { ProcessRow, TxProcessingSide } from '../../modules/feedback/processing-repo'
import { statusAfterSanitize } from '../../lifecycle/lifecycle'
import type { JobRow } from '../../lifecycle/jobs-repo'
import { DeferJob, type JobStep } from '../loop'
import type { BatchWindows } from './release-batch'
import { clusteringInput, prescrub, scrubbedFor, StaleScrub } from './sanitize-report'

export interface PgProcessDeps<Tx> {
  cluster: PgClusterService<Tx>
  batches: BatchWindows
}

/** How often one job plans a report again when its row changed between the plan and the write. */
const REPLANS = 3

/** Thrown inside the write's transaction to roll it back: the plan no longer holds. */
class Replan extends Error {
  constructor(reason: string) {
    super(reason)
  }
}

/** `repo`: the store's processing side; `Tx`: its transaction handle (a PgTx), passed through untouched. */
export function createPgProcessFeedbackStep<Tx>(repo: TxProcessingSide<Tx>, clock: Clock, deps: PgProcessDeps<Tx>): JobStep {
  const { cluster } = deps
  const STEPS = new Set(['received', 'sanitizing', 'sanitized'])

  /** The row still as it was read (the plan's basis), locked until the commit; else Replan. */
  async function lockAsRead(tx: Tx, read: ProcessRow): Promise<ProcessRow> {
    const now = await repo.lock(tx, read.id)
    if (!now || now.version !== read.version || now.status !== read.status || now.duplicate_of_id !== read.duplicate_of_id) {
      throw new Replan('the report changed while it was planned')
    }
    return now
  }

  /** A duplicate, or a report moved on (archived...): no lifecycle steps, but raw values are never kept. */
  async function finishStanding(read: ProcessRow, jobId: number): Promise<void> {
    const pre = prescrub(read)
    await repo.transaction(async (tx) => {
      const now = await lockAsRead(tx, read)
      if (now.redactions === null) {
        const s = scrubbedFor(now, pre)
        if (!(await repo.saveScrubbed(tx, now.id, now.version, s.columns, s.counts, clock.now(), false))) throw new Replan('concurrent update')
      }
      await repo.finishJob(tx, jobId)
    })
  }

  /** Plans (sanitizes, clusters in memory) and writes a report on its way; Replan when the plan no longer held. */
  async function advance(read: ProcessRow, jobId: number): Promise<void> {
    const pre = prescrub(read)
    const { scrubbed, sanitized } = clusteringInput(read, pre)
    const verdict = await cluster.plan(read.id, sanitized)
    if (!verdict) throw new Replan('the report is gone or a duplicate now')
    const routing = (await repo.routing(read.app_id)) ?? { processingMode: 'manual', batchEnabled: false, batchWindowHours: 0 }
    let after: () => void = () => {}
    try {
      await repo.transaction(async (tx) => {
        const now = await lockAsRead(tx, read)
        if (scrubbed && !(await repo.moveToSanitized(tx, now.id, now.version, scrubbed.columns, scrubbed.counts))) throw new Replan('concurrent update')
        const applied = await cluster.applyInTx(tx, now.id, verdict)
        if (!applied.ok) throw new Replan('the planned lead no longer takes duplicates')
        after = applied.after
        if (!verdict.leadId) {
          // A lead: to a human or the agent queue, now or when the App's batch window closes.
          if (routing.batchEnabled) await repo.ensureWindow(tx, now.app_id, deps.batches.closesAt(routing.batchWindowHours))
          else if (!(await repo.move(tx, now.id, statusAfterSanitize(routing), 'sanitized'))) throw new Replan('concurrent update')
        }
        await repo.finishJob(tx, jobId)
      })
    } catch (e) {
      cluster.dropPlan(read.id, read.app_id)
      throw e
    }
    after()
  }

  return {
    async run(job: JobRow): Promise<void> {
      if (!job.feedback_id) {
        await repo.transaction((tx) => repo.finishJob(tx, job.id))
        return
      }
      for (let attempt = 1; ; attempt++) {
        const read = await repo.get(job.feedback_id)
        try {
          if (!read) await repo.transaction((tx) => repo.finishJob(tx, job.id))
          else if (read.duplicate_of_id || !STEPS.has(read.status)) await finishStanding(read, job.id)
          else await advance(read, job.id)
          return
        } catch (e) {
          if (!(e instanceof Replan) && !(e instanceof StaleScrub)) throw e
          if (attempt >= REPLANS) throw new DeferJob(0, e.message, job.run_after)
        }
      }
    },
    finishesJob: true,
    async onGiveUp(job: JobRow, error: string): Promise<void> {
      if (!job.feedback_id) return
      const row = await repo.get(job.feedback_id)
      if (row && canSystemMove(row.status, 'failed')) await repo.fail(row.id, row.version, `processing failed: ${error}`)
    },
  }
}
