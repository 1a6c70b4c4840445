/**
 * Why the data dir's SQLite database cannot be opened, in the operator's terms, when the cause is theirs to
 * fix: a read-only or full file system, no inodes left for `-wal`/`-shm`, a `-wal` fixloop's user may not
 * read, a damaged file. Every command and `serve` then exit 2 with the path and the fix (StartupError),
 * instead of exit 1 with SQLite's bare "unable to open database file" and a stack trace. SQLite's codes
 * do not say which of these it was (a file system remounted read-only and a full one both end in
 * SQLITE_CANTOPEN or SQLITE_IOERR_*), so the folder is looked at.
 */
import { accessSync, constants, statSync, statfsSync } from 'node:fs'
import { basename, dirname } from 'node:path'
import { StartupError } from '../core/startup-error'

const ENVIRONMENT = /^SQLITE_(CANTOPEN|READONLY|FULL|IOERR|PERM|AUTH)/
const DAMAGED = /^SQLITE_(CORRUPT|NOTADB)/

/**
 * A StartupError naming the file and the cause, or undefined when the error is not the environment's.
 * `sidecars`: the files SQLite makes beside it (the data dir's lock keeps a rollback journal instead).
 */
export function openRefusal(file: string, e: unknown, sidecars = ['-wal', '-shm']): StartupError | undefined {
  const code = typeof (e as { code?: unknown })?.code === 'string' ? (e as { code: string }).code : ''
  const said = `${code}: ${e instanceof Error ? e.message : String(e)}`
  if (DAMAGED.test(code)) {
    return new StartupError(
      `the database ${file} is damaged (${said}): keep a copy of the data dir, then restore the last backup (fixloop restore --from FILE --data-dir ${dirname(file)} --force)`,
    )
  }
  if (!ENVIRONMENT.test(code)) return undefined
  return new StartupError(`cannot use the database ${file}: ${diagnose(file)} (${said}); SQLite must be able to write it and create ${sidecars.map((x) => basename(file) + x).join(' and ')} beside it`)
}

function diagnose(file: string): string {
  const dir = dirname(file)
  try {
    accessSync(dir, constants.W_OK)
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code
    if (code === 'EROFS') return `the file system of ${dir} is read-only`
    if (code === 'EACCES' || code === 'EPERM') return `fixloop's user may not write in ${dir}`
  }
  try {
    const s = statfsSync(dir)
    if (Number(s.bavail) === 0) return `the disk of ${dir} is full`
    // tmpfs and most file systems count inodes; 0 free means no new file (-wal, -shm) can be made.
    if (Number(s.files) > 0 && Number(s.ffree) === 0) return `the file system of ${dir} has no free inodes left`
  } catch {}
  for (const side of [file, `${file}-wal`, `${file}-shm`]) {
    try {
      if (!statSync(side).isFile()) return `${side} is not a file`
      accessSync(side, constants.R_OK | constants.W_OK)
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code
      if (code === 'EACCES' || code === 'EPERM') return `fixloop's user may not read and write ${side}`
    }
  }
  return 'SQLite could not open or write it'
}
