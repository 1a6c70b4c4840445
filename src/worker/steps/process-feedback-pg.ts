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
import type { BatchLockedRow, ProcessedWrite, ProcessRow, TxProcessingSide } from '../../modules/feedback/processing-repo'
import { statusAfterSanitize } from '../../lifecycle/lifecycle'
import { decideMove, sanitizedPath } from '../../lifecycle/rules'
import type { OutboxEvent } from '../../lifecycle/event-types'
import type { FeedbackStatus } from '../../core/fsm'
import type { Sanitized, Verdict } from '../../dedup/clusterer'
import { attachedPayload, attachPlan, mayAttach, stayLeadPlan, type ClusterWrite } from '../../dedup/steps'
import { whyAutomatic } from '../../dedup/suggestions'
import type { JobRow } from '../../lifecycle/jobs-repo'
import { DeferJob, type JobStep } from '../loop'
import type { BatchWindows } from './release-batch'
import { clusteringInput, prescrub, scrubbedFor, StaleScrub, type Scrubbed } from './sanitize-report'

export interface PgProcessDeps<Tx> {
  cluster: PgClusterService<Tx>
  batches: BatchWindows
  /** Reports per batch at most (default DEFAULT_PG_BATCH_SIZE; 1: one at a time). */
  batchSize?: number
  /** False while batches should not start (intake active recently): one job at a time then. */
  mayBatch?: () => boolean
}

/**
 * Reports per batch: a batch costs about 15 statements whatever its size (bench/README "Issue 38"), so
 * a few hundred make that well under one per report, while one transaction still holds its row locks for
 * a few tens of milliseconds only.
 */
export const DEFAULT_PG_BATCH_SIZE = 256

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
  async function finishStanding(read: ProcessRow, job: JobRow): Promise<void> {
    const pre = prescrub(read)
    await repo.transaction(async (tx) => {
      const now = await lockAsRead(tx, read)
      if (now.redactions === null) {
        const s = scrubbedFor(now, pre)
        if (!(await repo.saveScrubbed(tx, now.id, now.version, s.columns, s.counts, clock.now(), false))) throw new Replan('concurrent update')
      } else if (now.duplicate_of_id) {
        // Sanitized ahead and merged by hand before it was clustered: done now.
        await repo.markProcessed(tx, now.id, clock.now())
      }
      await repo.finishJob(tx, job)
    })
  }

  /** Plans (sanitizes, clusters in memory) and writes a report on its way; Replan when the plan no longer held. */
  async function advance(read: ProcessRow, job: JobRow): Promise<void> {
    const pre = prescrub(read)
    const { scrubbed, sanitized } = clusteringInput(read, pre)
    const verdict = await cluster.plan(read.id, sanitized)
    if (!verdict) throw new Replan('the report is gone or a duplicate now')
    const routing = (await repo.routing(read.app_id)) ?? { processingMode: 'manual', batchEnabled: false, batchWindowHours: 0 }
    let after: () => void = () => {}
    try {
      await repo.transaction(async (tx) => {
        // The report and its planned lead locked together, in id order, before anything else: the order of
        // every other writer of a cluster's rows (a merge by hand, a reporter's erasure, the batch below:
        // src/db/pg/reporters.ts `lockAsMerges`). The report first and its lead later (older, so first in
        // id order) deadlocked with an erasure of the reporter holding the lead and waiting for the report.
        if (verdict.leadId) await repo.lockBatch(tx, [read.id, verdict.leadId])
        const now = await lockAsRead(tx, read)
        if (scrubbed && !(await repo.moveToSanitized(tx, now.id, now.version, scrubbed.columns, scrubbed.counts))) throw new Replan('concurrent update')
        const applied = await cluster.applyInTx(tx, now.id, verdict)
        if (!applied.ok) throw new Replan('the planned lead no longer takes duplicates')
        // Already `sanitized` before this job (sanitized ahead by an earlier version, or queued again):
        // processedAt says the verdict is in; one that has it keeps it.
        if (!scrubbed) await repo.markProcessed(tx, now.id, clock.now())
        after = applied.after
        if (!verdict.leadId) {
          // A lead: to a human or the agent queue, now or when the App's batch window closes.
          if (routing.batchEnabled) await repo.ensureWindow(tx, now.app_id, deps.batches.closesAt(routing.batchWindowHours))
          else if (!(await repo.move(tx, now.id, statusAfterSanitize(routing), 'sanitized'))) throw new Replan('concurrent update')
        }
        await repo.finishJob(tx, job)
      })
    } catch (e) {
      cluster.dropPlan(read.id, read.app_id)
      throw e
    }
    after()
  }

  const maxBatch = Math.max(1, deps.batchSize ?? DEFAULT_PG_BATCH_SIZE)

  /** One job the way `run` takes it; what it failed with, or undefined. */
  async function alone(job: JobRow): Promise<unknown> {
    try {
      await step.run(job)
      return undefined
    } catch (e) {
      return e ?? new Error('processing failed')
    }
  }

  /** A report of a batch on its way: its job, its row as read, its sanitized columns (not stored yet). */
  interface Item {
    i: number
    job: JobRow
    read: ProcessRow
    scrubbed: Scrubbed | undefined
    sanitized: Sanitized | undefined
  }

  /** A `feedback.status_changed` event of a batch's report. */
  const statusEvent = (row: BatchLockedRow, from: FeedbackStatus, to: FeedbackStatus): OutboxEvent => ({
    orgId: row.org_id,
    appId: row.app_id,
    type: 'feedback.status_changed',
    data: { feedbackId: row.id, from, to },
  })

  /**
   * Writes the planned batch in `tx`: the rows are locked (id order) and each plan is kept only if its row
   * is still as read and its lead (locked too, or written as a lead earlier in this batch) still takes it.
   * Answers the items written; the others' plans are dropped, for the one-at-a-time path.
   */
  async function writeBatch(tx: Tx, items: Item[], verdicts: (Verdict | null)[], routing: Map<string, { processingMode: string; batchEnabled: boolean; batchWindowHours: number }>): Promise<Set<Item>> {
    await deps.cluster.calibrationsInTx(tx)
    const leadIds = verdicts.flatMap((v) => (v?.leadId ? [v.leadId] : []))
    const locked = await repo.lockBatch(tx, [...new Set([...items.map((it) => it.read.id), ...leadIds])])
    const members = new Set(items.map((it) => it.read.id))
    /** Batch members written as leads: their status once written. */
    const leadsHere = new Map<string, FeedbackStatus>()
    const written = new Set<Item>()
    const reports: ProcessedWrite[] = []
    /** Each report's events in order; an attachment's carries its lead's count, known once the rows are written. */
    const events: (OutboxEvent | { attachedTo: string; data: Extract<ClusterWrite, { kind: 'attached' }>['data']; scope: { orgId: string; appId: string } })[] = []
    const dirty = new Set<string>()
    const attachments = new Map<string, number>()
    const windows = new Set<string>()
    const agentRuns: string[] = []
    const now = clock.now()
    items.forEach((it, k) => {
      const verdict = verdicts[k]
      const row = locked.get(it.read.id)
      const asRead = row && row.version === it.read.version && row.status === it.read.status && row.duplicate_of_id === it.read.duplicate_of_id
      if (!verdict || !row || !asRead || row.has_duplicates || (!it.scrubbed && row.status !== 'sanitized')) return
      if (verdict.leadId) {
        const here = leadsHere.get(verdict.leadId)
        const lead = here !== undefined ? { status: here, duplicate_of_id: null } : members.has(verdict.leadId) ? null : (locked.get(verdict.leadId) ?? null)
        if (!mayAttach(row, lead)) return
      }
      const path = it.scrubbed ? sanitizedPath({ id: row.id, orgId: row.org_id, appId: row.app_id, status: row.status, version: row.version }, row.version) : null
      if (it.scrubbed && !path) return
      let status: FeedbackStatus = 'sanitized'
      let bump = path ? path.length - 1 : 0
      if (path) for (let j = 1; j < path.length; j++) events.push(statusEvent(row, path[j - 1], path[j]))
      const write: ProcessedWrite = { id: row.id, version: row.version, status, bump, sanitized: it.scrubbed ? { columns: it.scrubbed.columns, redactions: it.scrubbed.counts } : null, duplicate: null, suggestion: null }
      // The clustering writes as one report at a time plans them (dedup/steps.ts), each kind in its batch statement.
      // The plans read a member's scope (Org, App) here; `redactions: null` asks for no in-memory lead state (that is SQLite's).
      const member = { id: row.id, org_id: row.org_id, app_id: row.app_id, created_at: 0, text: it.sanitized?.text ?? it.read.text, redactions: null }
      const plan = verdict.leadId ? attachPlan(row.id, verdict.leadId, false, whyAutomatic(verdict), member, []) : stayLeadPlan(row.id, { ...member, duplicate_of_id: null }, verdict.suggestion)
      for (const w of plan.writes) {
        if (w.kind === 'duplicate') {
          write.duplicate = { leadId: w.leadId, score: w.why.score, reason: w.why.reason }
          bump++
        } else if (w.kind === 'summary') dirty.add(w.leadId)
        else if (w.kind === 'attached') {
          events.push({ attachedTo: w.data.leadFeedbackId, data: w.data, scope: w.scope })
          attachments.set(w.data.leadFeedbackId, (attachments.get(w.data.leadFeedbackId) ?? 0) + 1)
        } else if (w.kind === 'suggestion') {
          write.suggestion = w.suggestion
          bump++
        } else if (w.kind === 'suggested') events.push({ orgId: w.scope.orgId, appId: w.scope.appId, type: 'feedback.duplicate_suggested', data: w.data })
        else throw new Error(`a batch does not write "${w.kind}"`)
      }
      if (!verdict.leadId) {
        // A lead: to a human or the agent queue, now or when the App's batch window closes.
        const app = routing.get(row.app_id) ?? { processingMode: 'manual', batchEnabled: false, batchWindowHours: 0 }
        if (app.batchEnabled) windows.add(row.app_id)
        else {
          const to = statusAfterSanitize(app)
          decideMove({ id: row.id, orgId: row.org_id, appId: row.app_id, status, version: row.version }, to, { by: 'system', from: 'sanitized' }, now)
          events.push(statusEvent(row, status, to))
          status = to
          bump++
          if (to === 'queued') agentRuns.push(row.id)
        }
        leadsHere.set(row.id, status)
      }
      write.status = status
      write.bump = bump
      reports.push(write)
      written.add(it)
    })
    if (reports.length === 0) return written
    for (const appId of windows) await repo.ensureWindow(tx, appId, deps.batches.closesAt(routing.get(appId)!.batchWindowHours))
    const jobsDone = [...written].map((it) => it.job)
    const n = await repo.writeProcessed(tx, { reports, jobsDone, agentRuns, now })
    if (n !== reports.length) throw new Error(`a batch wrote ${n} of its ${reports.length} locked rows`)
    const counts = await deps.cluster.summariesInTx(tx, [...dirty])
    // The k-th of a lead's m attachments in this batch saw the lead's count as it was then.
    const seen = new Map<string, number>()
    const ordered: OutboxEvent[] = events.map((e) => {
      if (!('attachedTo' in e)) return e
      const k = (seen.get(e.attachedTo) ?? 0) + 1
      seen.set(e.attachedTo, k)
      const count = (counts.get(e.attachedTo) ?? 0) - (attachments.get(e.attachedTo) ?? 0) + k
      return { orgId: e.scope.orgId, appId: e.scope.appId, type: 'feedback.duplicate_attached', data: attachedPayload(e.data, count) }
    })
    await repo.appendEvents(tx, ordered)
    return written
  }

  const step: JobStep = {
    /**
     * Many reports at once: read in one statement, sanitized and clustered in memory (clustering's rows
     * read once for the batch), then written in ONE transaction with a statement per kind of write
     * (writeBatch). A report whose row or planned lead changed meanwhile, a job without a report, a
     * duplicate or a report moved on, and every report of a batch whose transaction failed, go through
     * the one-at-a-time path (`run`) after the commit: same outcome, more statements.
     */
    async runBatch(jobs: JobRow[]): Promise<unknown[]> {
      const outcomes: unknown[] = jobs.map(() => undefined)
      const rest = new Set<number>()
      const reads = await repo.getMany(jobs.flatMap((j) => (j.feedback_id ? [j.feedback_id] : [])))
      const items: Item[] = []
      const taken = new Set<string>()
      jobs.forEach((job, i) => {
        const read = job.feedback_id ? reads.get(job.feedback_id) : undefined
        if (!read || read.duplicate_of_id || !STEPS.has(read.status) || taken.has(read.id)) return void rest.add(i)
        taken.add(read.id)
        try {
          const { scrubbed, sanitized } = clusteringInput(read, prescrub(read))
          items.push({ i, job, read, scrubbed, sanitized })
        } catch (e) {
          outcomes[i] = e ?? new Error('processing failed')
        }
      })
      let written = new Set<Item>()
      if (items.length > 0) {
        const routing = await repo.routingMany([...new Set(items.map((it) => it.read.app_id))])
        let verdicts: (Verdict | null)[] = []
        try {
          verdicts = await cluster.planBatch(items.map((it) => ({ id: it.read.id, appId: it.read.app_id, sanitized: it.sanitized })))
          written = await repo.transaction((tx) => writeBatch(tx, items, verdicts, routing))
        } catch {
          // Rolled back (a deadlock with a person's merge, a lost connection): each report goes alone.
          written = new Set()
        }
        for (const it of items) {
          if (written.has(it)) continue
          cluster.dropPlan(it.read.id, it.read.app_id)
          rest.add(it.i)
        }
      }
      for (const i of [...rest].sort((a, b) => a - b)) outcomes[i] = await alone(jobs[i])
      return outcomes
    },
    get batchSize() {
      return deps.mayBatch && !deps.mayBatch() ? 1 : maxBatch
    },
    async run(job: JobRow): Promise<void> {
      if (!job.feedback_id) {
        await repo.transaction((tx) => repo.finishJob(tx, job))
        return
      }
      for (let attempt = 1; ; attempt++) {
        const read = await repo.get(job.feedback_id)
        try {
          if (!read) await repo.transaction((tx) => repo.finishJob(tx, job))
          else if (read.duplicate_of_id || !STEPS.has(read.status)) await finishStanding(read, job)
          else await advance(read, job)
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
  return step
}
