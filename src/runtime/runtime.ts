/** The runtime as the composition roots hold it (opened by open.ts; its two shapes: embedded.ts, cluster.ts). */
import type { Context } from '../context'
import type { Logger } from '../core/logger'
import type { Storage } from '../db/storage'
import type { Store, WalKeeper } from '../db/store'
import type { Processing } from '../worker/processing'
import type { Mode, ModeOptions } from './mode'

/**
 * The context as the composition roots hold it: the store of the dialect they opened (`S`), and its
 * connection (`storage`, `T`) for the pieces that are the dialect's own (the processing engines, backup,
 * the checkpointer). Everything below the roots takes the repositories it needs.
 */
export interface Runtime<S extends Store = Store, T extends Storage = Storage> extends Context {
  readonly store: S
  readonly storage: T
  /**
   * The mode's wiring (embedded.ts or cluster.ts), bound to this runtime's dialect when it was opened.
   * Loaded when asked (the server asks): a CLI command does not load the workers, threads and limiters.
   */
  mode(log: Logger, options: ModeOptions): Promise<Mode>
  /**
   * The processing engine of this runtime's dialect, in this process (the CLI's triage, tests). Loaded
   * when asked: the clustering modules are the largest a command would load otherwise.
   */
  processing(options?: { batchBudgetMs?: number }): Promise<Processing>
  /** Where the rows live, for the start-up line (never the password). */
  readonly where: string
  /** The embedded store's write-ahead log, kept by the server (absent on PostgreSQL). */
  keepWal?(log: Logger): WalKeeper
}

/** How a command opens the runtime (open.ts, open-pg.ts). */
export interface ContextOptions {
  /**
   * For commands that only read (lists, backup): the data dir and its database must already exist, and
   * nothing is created, migrated or generated. A typo in --data-dir is then an error, not a new instance.
   */
  existingOnly?: boolean
}
