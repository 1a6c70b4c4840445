/** The runtime as the composition roots hold it (opened by open.ts). */
import type { Context } from '../context'
import type { Logger } from '../core/logger'
import type { Storage, SqliteStorage, PgStorage } from '../db/storage'
import type { SqliteStore } from '../db/sqlite/store'
import type { PgStore } from '../db/pg/store'
import type { WalKeeper } from '../db/sqlite/wal-keeper'
import type { Processing } from '../worker/processing'
import type { Mode, ModeOptions } from './mode'

/**
 * The context as the composition roots hold it: the store of the dialect they opened, and its connection
 * (`storage`) for the pieces that are the dialect's own (the processing engines, backup, the checkpointer).
 * Everything below the roots takes `Context` (or, better, the repositories it needs).
 */
export interface Runtime extends Context {
  readonly store: SqliteStore | PgStore
  readonly storage: Storage
  /** The mode's wiring (embedded.ts or cluster.ts), bound to this runtime's dialect when it was opened. */
  mode(log: Logger, options: ModeOptions): Mode
  /** The processing engine of this runtime's dialect, in this process (the CLI's triage, tests). */
  processing(options?: { batchBudgetMs?: number }): Processing
  /** Where the rows live, for the start-up line (never the password). */
  readonly where: string
  /** The embedded store's write-ahead log, kept by the server (absent on PostgreSQL). */
  keepWal?(log: Logger): WalKeeper
}

/** The runtime over the data dir's SQLite file. */
export interface EmbeddedRuntime extends Runtime {
  readonly store: SqliteStore
  readonly storage: SqliteStorage
}

/** The runtime of one cluster node, over PostgreSQL. */
export interface ClusterRuntime extends Runtime {
  readonly store: PgStore
  readonly storage: PgStorage
}

