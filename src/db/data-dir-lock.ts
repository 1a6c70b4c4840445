/**
 * One server per data dir. `serve` holds an exclusive SQLite lock on <dataDir>/serve.lock for its whole
 * life: SQLite's POSIX advisory locks are released by the kernel when the process dies (no stale lock
 * file after a crash or kill -9) and work on every filesystem SQLite itself supports. The admin CLI never
 * takes this lock, so it can still write while a server runs; restore and rekey take it, since they
 * replace what a running server holds open.
 */
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { StartupError } from '../core/startup-error'
import { createPrivateFile } from './data-dir'
import { openRefusal } from './open-refusal'

export const LOCK_FILE = 'serve.lock'

export interface DataDirLock {
  release(): void
}

/** Takes the lock or throws a StartupError naming `purpose` and the holder's situation. */
export function lockDataDir(dataDir: string, purpose: string): DataDirLock {
  const file = join(dataDir, LOCK_FILE)
  createPrivateFile(file)
  const db = new Database(file, { create: true })
  try {
    db.run('PRAGMA busy_timeout = 0')
    // Rollback journal + exclusive locking mode: the lock taken by BEGIN EXCLUSIVE is kept until close.
    db.run('PRAGMA journal_mode = DELETE')
    db.run('PRAGMA locking_mode = EXCLUSIVE')
    db.run('BEGIN EXCLUSIVE')
    db.run('CREATE TABLE IF NOT EXISTS holder (pid INTEGER)')
  } catch (e) {
    db.close()
    if (/locked|busy/i.test((e as Error).message)) {
      // The holder cannot be read (the lock covers the file): restore, rekey and migrate-db hold it too.
      throw new StartupError(
        `the data dir ${dataDir} is in use by another fixloop server, or by a restore, rekey or migrate-db under way (it holds ${file}); stop the server, or let the command finish, before ${purpose}`,
      )
    }
    // Its rollback journal cannot be made (read-only or full disk, no inodes): exit 2 with the path.
    throw openRefusal(file, e, ['-journal']) ?? e
  }
  return releaser(db)
}

/**
 * Ends a lock held by an open transaction on a lock file's connection (here and key-lock.ts): rolls it back
 * and closes, once.
 */
export function releaser(db: Database): DataDirLock {
  let held = true
  return {
    release() {
      if (!held) return
      held = false
      try {
        db.run('ROLLBACK')
      } catch {
        // nothing to roll back
      }
      db.close()
    },
  }
}
