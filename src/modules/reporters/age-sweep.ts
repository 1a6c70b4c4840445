/**
 * A sweep that deletes an App's reports once they are older than the App keeps them, in bounded batches:
 * the report retention (./retention.ts) and the spam folder's (src/abuse/spam-retention.ts) differ only in
 * which Apps, which reports and what they call it. Per App and run at most `maxBatches` × `batch`
 * reports (the rest at the next run), the deleted reports' uploads discarded, one audit row and one log
 * line per App that lost any. Runs never overlap.
 *
 * Intake never waits behind a sweep. The sweep runs on the HTTP thread, and a batch holds that thread (and
 * SQLite's write lock) for as long as it deletes: 200 reports take ~5 ms, and every request that arrives
 * meanwhile waits that long (measured: intake p99 5-7 ms alone, 9-17 ms during a sweep). So while intake
 * is busy (a commit in the last BUSY_WINDOW_MS, from the store's commit times), a batch is sized from the
 * measured cost per report to take about BUSY_BATCH_MS, and the sweep then pauses so that it takes at
 * most BUSY_SHARE of the thread. When intake is quiet, whole batches follow each other with only a yield
 * between. A sweep under steady load is slower (10,000 reports: a few seconds instead of 0.3 s); nobody
 * waits for it.
 */
import type { Clock } from '../../core/clock'
import type { Logger } from '../../core/logger'
import type { AuditEntry } from '../audit/entry'
import type { IntakeTurns } from '../../db/intake-turns'

const DAY_MS = 24 * 3600_000

export interface AgedApp {
  id: string
  orgId: string
  /** Reports older than this many days go. */
  days: number
}

export interface AgeSweepSpec {
  /** The Apps that keep these reports a limited time. */
  apps(): Promise<AgedApp[]>
  /** Deletes up to `limit` of the App's reports older than `before`: how many, and their uploads' keys. */
  deleteBatch(app: AgedApp, before: number, limit: number): Promise<{ deleted: number; uploadKeys: string[] }>
  batch: number
  maxBatches: number
  /** The audit action of a run that deleted some of an App's reports (e.g. `reports.expired`). */
  auditAction: string
  /** The log line of such a run. */
  logMessage: string
}

export interface AgeSweepDeps {
  /** Removes detached uploads' objects now (src/modules/uploads/service.ts `discard`). */
  uploads: { discard(keys: readonly string[]): Promise<number> }
  audit: { record(e: AuditEntry): Promise<unknown> }
  clock: Clock
  log: Logger
  /** Intake's commit times (the store's `turns`): the sweep paces itself while intake is busy. */
  intake?: Pick<IntakeTurns, 'msSinceIntakeCommit'>
}

/** Intake committed this recently: it is busy, and the sweep keeps out of its way. */
export const BUSY_WINDOW_MS = 50
/** A batch's time on the thread while intake is busy (a request arriving meanwhile waits at most this). */
export const BUSY_BATCH_MS = 1
/** The share of the thread the sweep takes while intake is busy. */
export const BUSY_SHARE = 0.1
/** The smallest batch: below it the per-batch statements cost more than the reports. */
const MIN_BATCH = 8

/** Lets queued work (intake requests, the group commit) run between two batches. */
export const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/**
 * The batch sizes and pauses: whole batches while intake is quiet, batches of about BUSY_BATCH_MS with
 * pauses that leave intake (1 - BUSY_SHARE) of the thread while it is busy. The cost per report is learnt
 * from the batches done (an average that follows the latest ones).
 */
export function batchPacer(batch: number, intake?: Pick<IntakeTurns, 'msSinceIntakeCommit'>) {
  let msPerReport = 0
  const busy = () => intake !== undefined && intake.msSinceIntakeCommit() < BUSY_WINDOW_MS
  return {
    /** How many reports the next batch deletes. */
    next(): number {
      if (!busy()) return batch
      if (msPerReport === 0) return MIN_BATCH
      return Math.max(MIN_BATCH, Math.min(batch, Math.floor(BUSY_BATCH_MS / msPerReport)))
    },
    /** A batch of `deleted` reports took `ms`: how long to pause before the next one. */
    done(deleted: number, ms: number): number {
      if (deleted > 0) msPerReport = msPerReport === 0 ? ms / deleted : 0.7 * msPerReport + 0.3 * (ms / deleted)
      return busy() ? Math.max(1, Math.ceil((ms * (1 - BUSY_SHARE)) / BUSY_SHARE)) : 0
    },
  }
}

export function createAgeSweep(spec: AgeSweepSpec, deps: AgeSweepDeps) {
  const { uploads, audit, clock, log, intake } = deps
  let deletedTotal = 0
  let running: Promise<number> | null = null

  async function sweepApp(app: AgedApp): Promise<number> {
    const before = clock.now() - app.days * DAY_MS
    const most = spec.batch * spec.maxBatches
    const pacer = batchPacer(spec.batch, intake)
    let deleted = 0
    let files = 0
    while (deleted < most) {
      const limit = Math.min(pacer.next(), most - deleted)
      const started = performance.now()
      const out = await spec.deleteBatch(app, before, limit)
      const waitMs = pacer.done(out.deleted, performance.now() - started)
      deleted += out.deleted
      deletedTotal += out.deleted
      if (out.uploadKeys.length > 0) files += await uploads.discard(out.uploadKeys)
      if (out.deleted < limit) break
      await pause(waitMs)
    }
    if (deleted > 0) {
      await audit.record({ orgId: app.orgId, actor: 'system', action: spec.auditAction, targetId: app.id, data: { deleted, attachments: files, retentionDays: app.days } })
      log.info(spec.logMessage, { appId: app.id, deleted, attachments: files, retentionDays: app.days })
    }
    return deleted
  }

  async function run(): Promise<number> {
    let deleted = 0
    for (const app of await spec.apps()) deleted += await sweepApp(app)
    return deleted
  }

  return {
    /** One pass over every App concerned; how many reports it deleted. Runs never overlap. */
    sweep(): Promise<number> {
      running ??= run().finally(() => (running = null))
      return running
    },
    /** Reports this process deleted since it started (the metric). */
    deletedTotal: () => deletedTotal,
  }
}
export type AgeSweep = ReturnType<typeof createAgeSweep>

/** Sweeps a minute after start and then every `everyMs` while `mine()` (the `maintenance` role); returns the stop function. */
export function startAgeSweep(sweep: Pick<AgeSweep, 'sweep'>, what: string, everyMs: number, log: Logger, mine: () => boolean = () => true): () => void {
  const run = async () => {
    if (!mine()) return
    try {
      await sweep.sweep()
    } catch (e) {
      log.warn(`${what} sweep failed; retried at the next run`, { error: e instanceof Error ? e.message : String(e) })
    }
  }
  const first = setTimeout(() => void run(), 60_000)
  const timer = setInterval(() => void run(), everyMs)
  return () => {
    clearTimeout(first)
    clearInterval(timer)
  }
}
