/**
 * A sweep that deletes an App's reports once they are older than the App keeps them, in bounded batches:
 * the report retention (./retention.ts) and the spam folder's (src/abuse/spam-retention.ts) differ only in
 * which Apps, which reports and what they call it. Per App and run at most `maxBatches` of `batch`
 * reports (the rest at the next run), a yield to the event loop between batches (intake never waits
 * behind a sweep), the deleted reports' uploads discarded, one audit row and one log line per App that
 * lost any. Runs never overlap.
 */
import type { Clock } from '../../core/clock'
import type { Logger } from '../../core/logger'
import type { AuditEntry } from '../audit/entry'

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
}

/** Lets queued work (intake requests, the group commit) run between two batches. */
const yieldToOthers = () => new Promise<void>((resolve) => setTimeout(resolve, 0))

export function createAgeSweep(spec: AgeSweepSpec, deps: AgeSweepDeps) {
  const { uploads, audit, clock, log } = deps
  let deletedTotal = 0
  let running: Promise<number> | null = null

  async function sweepApp(app: AgedApp): Promise<number> {
    const before = clock.now() - app.days * DAY_MS
    let deleted = 0
    let files = 0
    for (let batch = 0; batch < spec.maxBatches; batch++) {
      const out = await spec.deleteBatch(app, before, spec.batch)
      deleted += out.deleted
      deletedTotal += out.deleted
      if (out.uploadKeys.length > 0) files += await uploads.discard(out.uploadKeys)
      if (out.deleted < spec.batch) break
      await yieldToOthers()
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
