/**
 * Embedded mode (the default): one process over its data dir's SQLite file, holding every role itself,
 * rate limits and sign-in throttles in memory. Sanitizing, clustering and batch releases run on the
 * processing thread (its own connection and core; a second thread sanitizes ahead during a backlog),
 * or, when tests drive the worker with an injected clock, in this thread's worker.
 */
import { join } from 'node:path'
import { cpus } from 'node:os'
import type { Logger } from '../core/logger'
import { localThrottles } from '../core/failure-throttle'
import { takeTurnsForTransactions } from '../db/sqlite/write-turns'
import { DB_FILE } from '../db/data-dir'
import { createRateLimiters } from '../http/rate-limit'
import type { JobKind } from '../lifecycle/jobs'
import { soloCoordinator } from '../nodes/coordinator'
import { Worker } from '../worker/loop'
import { intakePacing, isProcessingKind } from '../worker/processing'
import { createSqliteProcessingEngine } from '../worker/processing-sqlite'
import { ProcessingThread } from '../worker/thread'
import { SanitizerOnDemand } from '../worker/sanitizer-on-demand'
import type { Runtime } from './runtime'
import type { SqliteStore } from '../db/sqlite/store'
import type { SqliteStorage } from '../db/storage'
import type { Mode, ModeOptions, ModeWorkers } from './mode'

/** The runtime over the data dir's SQLite file. */
export type EmbeddedRuntime = Runtime<SqliteStore, SqliteStorage>

export function embeddedMode(rt: EmbeddedRuntime, log: Logger, options: ModeOptions): Mode {
  const { config, clock, store } = rt
  return {
    nodeId: undefined,
    coordinator: soloCoordinator(),
    redis: undefined,
    limiters: createRateLimiters(clock, config.rateLimitMultiplier),
    throttles: localThrottles(clock, config.rateLimitMultiplier),
    // The processing thread's commits give no signal here: the hub polls.
    eventsPollMs: 100,
    start({ ownSteps }): ModeWorkers {
      const workerOptions = options.worker ?? {}
      const base = { unheardPeers: () => [], nodeMetrics: () => [] }
      if (options.processingThread) {
        const worker = new Worker(store.jobs(Object.keys(ownSteps) as JobKind[]), ownSteps, clock, log, workerOptions)
        const { busy: _busy, saturated: _saturated, ...threadOptions } = workerOptions
        const file = join(config.dataDir, DB_FILE)
        const thread = new ProcessingThread(file, store.turns, log, threadOptions, () => worker.wake())
        // Started by server.ts like the processing thread, but only once a backlog gives it work (sanitizer-on-demand.ts).
        const sanitizer = (options.sanitizeAhead ?? cpus().length >= 2)
          ? new SanitizerOnDemand(new ProcessingThread(file, store.turns, log, {}, () => {}, 'sanitizer'), store.sides.sanitizeAhead, log)
          : undefined
        // This thread's other transactions (customer moves, admin changes) go ahead of processing too.
        takeTurnsForTransactions(store.storage.sqlite, store.turns, 'intake')
        store.wake.on((kind) => {
          if (!isProcessingKind(kind)) return worker.wake()
          thread.wake()
          if (kind === 'process') sanitizer?.wake()
        })
        return { ...base, worker, cluster: thread, processingThread: thread, sanitizerThread: sanitizer }
      }
      const processing = createSqliteProcessingEngine(store, clock, undefined, options.batchBudgetMs)
      // Sharing intake's thread, the worker paces itself while intake is busy, and takes only a small share
      // of the core while intake saturates it.
      const worker = new Worker(store.jobs(), { ...processing.steps, ...ownSteps }, clock, log, { ...intakePacing(store.turns), ...workerOptions })
      store.wake.on(() => worker.wake())
      return { ...base, worker, cluster: processing.port }
    },
  }
}
