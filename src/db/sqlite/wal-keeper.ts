/**
 * The embedded store's write-ahead log, as the server keeps it: the checkpointer thread copies it back
 * while the server runs (timed by intake's commits), and one last TRUNCATE at shutdown leaves no scrubbed
 * value on the disk. PostgreSQL has none of this: its WAL is the database server's business.
 */
import type { Logger } from '../../core/logger'
import { Checkpointer } from './checkpointer'
import type { SqliteStore } from './store'
import type { WalKeeper } from '../store'

export type { WalKeeper }

export function keepWal(store: SqliteStore, file: string, log: Logger): WalKeeper {
  const { sqlite } = store.storage
  const checkpointer = new Checkpointer(sqlite, file, log)
  return {
    walFile: `${file}-wal`,
    // Intake's commit times (the store's turns) tell it when a TRUNCATE would not wait behind a burst.
    start: () => checkpointer.start(store.turns),
    health: () => checkpointer.health(),
    stop: (waitMs) => checkpointer.stop(waitMs),
    truncate() {
      try {
        sqlite.run('PRAGMA busy_timeout = 200')
        sqlite.run('PRAGMA wal_checkpoint(TRUNCATE)')
      } catch {
        // A reader elsewhere may hold the WAL; the next start checkpoints it.
      }
    },
  }
}
