/**
 * The data dir: where it is made, what it may hold, who may read it.
 *
 * - A data dir that does not exist, or exists without a database (an empty dir made by mkdtemp or a
 *   Docker volume, or one holding only an operator's own files), becomes a NEW instance: never silently.
 *   The first command to create the database says so on stderr with the absolute path, so a mistyped
 *   --data-dir is seen at once instead of as a mysteriously empty instance.
 * - Everything in it is owner-only: the dir 0700, files 0600 (the database holds reports not yet
 *   sanitized and sealed secrets). New files are created so; an existing dir whose mode lets others in is
 *   tightened at open (with a notice), since a 0700 dir keeps everything below it private.
 */
import { chmodSync, closeSync, existsSync, lstatSync, mkdirSync, openSync, statSync, type Stats } from 'node:fs'
import { dirname, join } from 'node:path'
import { StartupError } from '../core/startup-error'

export const DB_FILE = 'fixloop.db'
/** Files at the top of a data dir that must be owner-only (blobs/ is a 0700 dir of its own). */
const PRIVATE_FILES = [DB_FILE, `${DB_FILE}-wal`, `${DB_FILE}-shm`, 'master.key', 'serve.lock', 'rekey.lock']
/**
 * What a third user must not own (or link) in a data dir (refuseForeign): the private files, the journals
 * SQLite opens beside them, the re-key's staged key (`rekey` writes the new key through whatever is there)
 * and the blob store (a planted `blobs` link took every upload into a folder of theirs).
 */
const OWNED_ENTRIES = [...PRIVATE_FILES, `${DB_FILE}-journal`, 'serve.lock-journal', 'rekey.lock-journal', 'master.key.new', 'blobs']

let notice: (line: string) => void = () => {}
const announced = new Set<string>()

/**
 * Says that an existing database was upgraded (some of the embedded migrations applied to it, not all: a
 * new database is announced as a new instance). Nothing else in a start's output showed that an upgrade
 * happened, or which schema it left (an upgrade audit).
 */
export function announceUpgrade(database: string, applied: readonly string[], known: number): void {
  if (applied.length === 0 || applied.length >= known) return
  const range = applied.length === 1 ? applied[0] : `${applied[0]} … ${applied.at(-1)}`
  notice(`fixloop: upgraded the database ${database}: ${applied.length} migration${applied.length === 1 ? '' : 's'} applied (${range})\n`)
}

/** Where notices go (the CLI: stderr). Library users and tests stay quiet by default. */
export function setDataDirNotices(sink: (line: string) => void): void {
  notice = sink
}

/**
 * Creates `path` as an empty owner-only (0600) file unless it exists. SQLite gives the -wal and -shm
 * files it makes later the database file's own mode, so creating the database this way covers them too.
 */
export function createPrivateFile(path: string): void {
  try {
    closeSync(openSync(path, 'wx', 0o600))
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e
  }
}

/** chmod when the mode lets group or others in; returns whether it changed anything. */
function tighten(path: string, mode: number): boolean {
  let current: number
  try {
    current = statSync(path).mode & 0o777
  } catch {
    return false
  }
  if ((current & 0o077) === 0) return false
  try {
    chmodSync(path, mode)
    return true
  } catch {
    return false // not ours (another user's dir): opening it will say what is wrong
  }
}

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path)
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw e
  }
}

/**
 * Refuses a data dir, or a master key, database, WAL, SHM, journal, lock file, staged re-key or blob store
 * in it, that another local user owns or could have planted. Tightening modes (below) cannot fix those: the owner of a file or dir keeps every
 * right to it whatever its mode, and root's chmod follows a symlink to any file on the machine. A data dir
 * in a folder others could write to before the first start (`mkdir -m 777`, a shared group, a path under
 * /tmp another user made first) otherwise became an instance whose master key was one the other user wrote
 * (and so knows: every sealed secret and backup MAC), whose dir they own (they can swap its files), or
 * whose `fixloop.db` symlink turned the open's chmod 0600 on a file of their choosing (run as root: any
 * file). Found by the ops attack. Allowed: whatever we, root or the data dir's owner own (a symlinked data
 * dir whose link is root's: systemd's DynamicUser makes /var/lib/fixloop a root-owned link to
 * /var/lib/private/fixloop; a root-owned volume a group may write to); as root, any user's data dir.
 */
export function refuseForeign(dataDir: string): void {
  const uid = process.getuid?.()
  if (uid === undefined) return
  const fix = `run fixloop as the user that owns the data dir, or give it a dir of its own (check --data-dir or FIXLOOP_DATA_DIR)`
  const dir = statSync(dataDir)
  // The dir: ours, or root's (root can read and replace anything anyway, so it plants nothing a check could
  // keep out, and a volume root owns and lets a group write, Kubernetes' fsGroup, is a normal data dir).
  // Root itself may work on any user's data dir: packaging/fixloop.service documents running the CLI as
  // root on the DynamicUser's /var/lib/private/fixloop (SQLite gives the files root makes there the
  // database file's owner).
  if (uid !== 0 && dir.uid !== uid && dir.uid !== 0) {
    throw new StartupError(`the data dir ${dataDir} belongs to another user (uid ${dir.uid}, this is uid ${uid}): its owner can read, replace or plant the master key and the database whatever their modes; ${fix}`)
  }
  // Inside it, and for a link to it: only what we, root or the dir's owner own. A third user's file there
  // was planted (in a dir others could write to before it was tightened).
  const trusted = (owner: number) => owner === uid || owner === 0 || owner === dir.uid
  const link = lstatOrNull(dataDir)
  if (link?.isSymbolicLink() && !trusted(link.uid)) {
    throw new StartupError(`the data dir ${dataDir} is a symbolic link that belongs to another user (uid ${link.uid}): they choose where the master key and the database go; ${fix}`)
  }
  for (const name of OWNED_ENTRIES) {
    const path = join(dataDir, name)
    const st = lstatOrNull(path)
    if (!st) continue
    const target = st.isSymbolicLink() ? (() => { try { return statSync(path) } catch { return null } })() : st
    if (!trusted(st.uid) || (target && !trusted(target.uid))) {
      throw new StartupError(`${path} belongs to another user (uid ${!trusted(st.uid) ? st.uid : target!.uid}${st.isSymbolicLink() ? ', through a symbolic link' : ''}), not to this one (uid ${uid}) nor the data dir's owner (uid ${dir.uid}): a file planted there hands fixloop a master key or database someone else controls, or turns its chmod on a file of their choosing; remove it (or restore the data dir from a backup) and ${fix}`)
    }
  }
}

export interface PreparedDataDir {
  /** The directory did not exist and was made now. */
  created: boolean
  /** No database there yet: the command about to run makes a new instance. */
  fresh: boolean
}

/**
 * Makes the data dir ready to hold a database: created (0700, parents too) when missing, refused when
 * it is a file, permissions tightened, and a new instance announced once per process and dir.
 */
/** The outermost folders this process made for a data dir (the dir and its missing parents), in order. */
const madeByThisProcess: string[] = []

/**
 * What this process made for data dirs that did not exist: a CLI command that then fails (`key revoke` on a
 * mistyped --data-dir) removes them again (main.ts), so a typo leaves no new instance behind.
 */
export const dataDirsMadeByThisProcess = (): readonly string[] => madeByThisProcess

export function prepareDataDir(dataDir: string, options: { announce?: boolean } = {}): PreparedDataDir {
  let created = false
  if (!existsSync(dataDir)) {
    let outermost = dataDir
    for (let p = dirname(dataDir); p !== dirname(p) && !existsSync(p); p = dirname(p)) outermost = p
    mkdirSync(dataDir, { recursive: true, mode: 0o700 })
    madeByThisProcess.push(outermost)
    created = true
  } else if (!statSync(dataDir).isDirectory()) {
    throw new StartupError(`the data dir ${dataDir} is not a directory (check --data-dir or FIXLOOP_DATA_DIR)`)
  }
  refuseForeign(dataDir)
  const fresh = !existsSync(join(dataDir, DB_FILE))
  const fixed = [dataDir, ...PRIVATE_FILES.map((f) => join(dataDir, f))].filter((p, i) => tighten(p, i === 0 ? 0o700 : 0o600))
  if (fixed.length > 0) notice(`fixloop: made ${fixed.join(', ')} owner-only (they hold reports and sealed secrets)\n`)
  if (fresh && options.announce !== false && !announced.has(dataDir)) {
    announced.add(dataDir)
    notice(
      created
        ? `fixloop: creating a new instance in ${dataDir} (the directory did not exist; if you meant an existing one, check --data-dir or FIXLOOP_DATA_DIR)\n`
        : `fixloop: creating a new instance in ${dataDir} (it holds no ${DB_FILE} yet; if you meant an existing one, check --data-dir or FIXLOOP_DATA_DIR)\n`,
    )
  }
  return { created, fresh }
}
