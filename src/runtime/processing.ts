/**
 * The processing engine of the runtime's dialect, in this process (not on a thread of its own): the
 * CLI's triage commands, tests that drive the worker with an injected clock, and a cluster node that
 * holds the `processing` role.
 */
import type { Runtime } from './open'
import type { Processing } from '../worker/processing'
import { createSqliteProcessingEngine } from '../worker/processing-sqlite'
import { createPgProcessingEngine } from '../worker/processing-pg'

export function inProcessProcessing(rt: Runtime, options: { batchBudgetMs?: number } = {}): Processing {
  return rt.store.dialect === 'sqlite' ? createSqliteProcessingEngine(rt.store, rt.clock, undefined, options.batchBudgetMs) : createPgProcessingEngine(rt.store, rt.clock)
}
