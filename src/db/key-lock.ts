/**
 * `rekey` against the commands that read the master key from a data dir (every admin command, `backup`):
 * they hold a SHARED lock on <dataDir>/rekey.lock from before they read the key until they exit, `rekey`
 * an EXCLUSIVE one around its transaction and the replacement of master.key. Without it a command that had
 * checked the key just before the re-key's transaction sealed its new secret under the old key after the
 * commit (one value no key opened), and a backup signed the archive with the old key over a database copy
 * already sealed with the new one (restore refused it: the operator had no backup). Found by the ops attack.
 *
 * The same kind of lock as serve.lock (data-dir-lock.ts): SQLite's POSIX advisory locks, released by the
 * kernel when a process dies, on every file system SQLite supports. `serve` takes none: rekey refuses to
 * run beside a server anyway (serve.lock).
 */
import { Database } from 'bun:sqlite'
import { existsSync, lchownSync, lstatSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { StartupError } from '../core/startup-error'
import { createPrivateFile } from './data-dir'
import { releaser } from './data-dir-lock'
import { openRefusal } from './open-refusal'

export const KEY_LOCK_FILE = 'rekey.lock'

/** How long either side waits for the other (an admin command lasts well under it; a large re-key may not). */
const WAIT_MS = 10_000
/** The lock file cannot be made: nor can a rekey make it, so there is no re-key to keep out. */
const CANNOT_CREATE = new Set(['EROFS', 'ENOSPC', 'EDQUOT', 'EACCES', 'EPERM'])

const held = new Map<string, Database>()

/**
 * Root working on a service user's data dir (packaging/fixloop.service documents the CLI run so) hands the
 * lock file to the dir's owner, as SQLite does with the files it makes beside a database: a root-owned
 * 0600 rekey.lock, made by the first admin command or backup after an upgrade run as root, left every
 * later one of the service user (a backup timer, `systemd-run` with the DynamicUser) failing with exit 2
 * on a file it could not open. lchown: never through a link.
 */
function giveToDirOwner(dataDir: string, file: string): void {
  if (process.getuid?.() !== 0) return
  try {
    const dir = statSync(dataDir)
    const st = lstatSync(file)
    if (st.isFile() && st.uid === 0 && dir.uid !== 0) lchownSync(file, dir.uid, dir.gid)
  } catch {
    // A read-only data dir: the file stays as it is (nothing can be written there anyway).
  }
}

/**
 * Holds the shared lock on `dataDir`'s key until this process exits (once per dir). Waits up to WAIT_MS for a
 * re-key in progress, then refuses (StartupError) rather than read a key that is about to change.
 */
export function holdKeyShared(dataDir: string): void {
  const file = join(dataDir, KEY_LOCK_FILE)
  if (held.has(file)) return
  // Created before SQLite opens it, never after: closing any descriptor of a file drops this process's
  // POSIX locks on it.
  if (!existsSync(file)) {
    try {
      createPrivateFile(file)
    } catch (e) {
      if (CANNOT_CREATE.has((e as NodeJS.ErrnoException).code ?? '')) return
      throw e
    }
  }
  giveToDirOwner(dataDir, file)
  const db = openLockFile(file)
  try {
    db.run(`PRAGMA busy_timeout = ${WAIT_MS}`)
    // A read transaction holds SQLite's SHARED lock until it ends: many commands at once, no re-key.
    db.run('BEGIN')
    db.query('SELECT count(*) FROM sqlite_master').get()
  } catch (e) {
    db.close()
    if (/locked|busy/i.test((e as Error).message)) {
      throw new StartupError(`a rekey is running on ${dataDir} (it holds ${file}); its master key is changing: run this command again when the rekey has finished`)
    }
    throw openRefusal(file, e, ['-journal']) ?? e
  }
  held.set(file, db)
}

/**
 * The lock file opened by SQLite, or a StartupError naming IT: SQLite's bare SQLITE_CANTOPEN (a lock file
 * another user owns, a folder by that name) reached the command's generic handler, which named fixloop.db.
 */
function openLockFile(file: string): Database {
  try {
    return new Database(file, { create: true })
  } catch (e) {
    throw openRefusal(file, e, ['-journal']) ?? e
  }
}

export interface KeyLock {
  release(): void
}

/**
 * The exclusive lock for `rekey` and `restore` (both replace the key): waits up to WAIT_MS for the commands
 * that hold the key, then refuses.
 */
export function lockKeyExclusive(dataDir: string, command: 'rekey' | 'restore' = 'rekey'): KeyLock {
  const file = join(dataDir, KEY_LOCK_FILE)
  createPrivateFile(file)
  giveToDirOwner(dataDir, file)
  const db = openLockFile(file)
  try {
    db.run(`PRAGMA busy_timeout = ${WAIT_MS}`)
    db.run('PRAGMA locking_mode = EXCLUSIVE')
    db.run('BEGIN EXCLUSIVE')
  } catch (e) {
    db.close()
    if (/locked|busy/i.test((e as Error).message)) {
      throw new StartupError(
        `another fixloop command (a backup or an admin command) has been using the master key of ${dataDir} for ${WAIT_MS / 1000} s (it holds ${file}): nothing was ${command === 'rekey' ? 're-keyed' : 'restored'}; run ${command} again when it has finished`,
      )
    }
    throw openRefusal(file, e, ['-journal']) ?? e
  }
  return releaser(db)
}
