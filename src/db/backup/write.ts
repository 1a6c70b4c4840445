/**
 * Writes one backup archive (format: manifest.ts) while the server may be running: the database through
 * VACUUM INTO (a consistent snapshot; concurrent writers are not blocked), then every blob the embedded
 * store holds, hashed while streamed, then the manifest and its MAC under the master key (mac.ts). The file is written under a temporary name and
 * renamed only when complete, created 0600 (it holds reports, and with --include-master-key the key).
 */
import type { Database } from 'bun:sqlite'
import { closeSync, createReadStream, createWriteStream, existsSync, lstatSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, statSync } from 'node:fs'
import { createHash } from 'node:crypto'
import { dirname, join, relative } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { Transform } from 'node:stream'
import { pack as tarPack, type Pack } from 'tar-stream'
import { BLOB_PREFIX, DB_ENTRY, FORMAT, FORMAT_VERSION, humanBytes, KEY_ENTRY, MAC_NAME, MANIFEST_NAME, MAX_MANIFEST_BYTES, throttled, type Manifest, type ManifestFile } from './manifest'
import { manifestMac } from './mac'
import { VERSION } from '../../version'
import { masterKeyFile, parseMasterKey } from '../../core/master-key'
import { StartupError } from '../../core/startup-error'

export interface BackupOptions {
  sqlite: Database
  dataDir: string
  out: string
  includeMasterKey: boolean
  storage: 'embedded' | 's3'
  /** Master key text to include when it comes from FIXLOOP_MASTER_KEY rather than master.key. */
  masterKeyText?: string
  /** The master key: the archive's MAC is keyed by a key derived from it. */
  masterKey: Uint8Array
  progress: (line: string) => void
}

/** Embedded-store objects, skipping uploads still being written (".part-" temp files). */
function listBlobs(dataDir: string): string[] {
  const root = join(dataDir, 'blobs')
  if (!existsSync(root)) return []
  return (readdirSync(root, { recursive: true, withFileTypes: true }) as import('node:fs').Dirent[])
    .filter((d) => d.isFile() && !d.name.includes('.part-'))
    .map((d) => relative(root, join(d.parentPath, d.name)).split('\\').join('/'))
    .sort()
}

/** Streams one file into the archive, returning its manifest line; undefined when it vanished meanwhile. */
async function addFile(pack: Pack, name: string, file: string): Promise<ManifestFile | undefined> {
  let size: number
  try {
    size = statSync(file).size
  } catch {
    return undefined // removed (e.g. by upload garbage collection) after it was listed
  }
  const hash = createHash('sha256')
  const entry = pack.entry({ name, size, mode: 0o600, mtime: new Date() })
  const hasher = new Transform({
    transform(chunk, _enc, done) {
      hash.update(chunk)
      done(null, chunk)
    },
  })
  await pipeline(createReadStream(file), hasher, entry)
  return { path: name, bytes: size, sha256: hash.digest('hex') }
}

/** Whether a process with this id runs (EPERM: it does, as another user). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** A partial archive this tool wrote: a ustar file whose first entry is the database. */
function isPartialArchive(path: string): boolean {
  const head = Buffer.alloc(263)
  let fd: number | undefined
  try {
    fd = openSync(path, 'r')
    if (readSync(fd, head, 0, head.length, 0) < head.length) return false
  } catch {
    return false
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
  return head.subarray(0, DB_ENTRY.length + 1).equals(Buffer.from(`${DB_ENTRY}\0`)) && head.subarray(257, 262).toString() === 'ustar'
}

/**
 * What backups killed midway (kill -9, the OOM killer, a cron timeout) left in the folder of --out: the
 * partial archive `<name>.partial-<pid>` and the folder of the database copy `.fixloop-backup-<pid>-XXXXXX`
 * (a whole copy of the database, hidden, that nothing else would remove). Removed when that process no
 * longer runs and the entry is this user's; a backup running beside this one keeps its own.
 */
export function removeKilledBackups(folder: string): string[] {
  const uid = process.getuid?.()
  const removed: string[] = []
  for (const name of readdirSync(folder)) {
    const pid = Number((/^\.fixloop-backup-(\d+)-[A-Za-z0-9]{6}$/.exec(name) ?? /\.partial-(\d+)$/.exec(name))?.[1])
    if (!Number.isSafeInteger(pid) || pid === process.pid || running(pid)) continue
    const path = join(folder, name)
    let st: import('node:fs').Stats
    try {
      st = lstatSync(path)
    } catch {
      continue
    }
    if (uid !== undefined && st.uid !== uid) continue
    // A partial archive is empty until the database copy is made (killed during VACUUM INTO).
    if (name.startsWith('.fixloop-backup-') ? !st.isDirectory() : !st.isFile() || (st.size > 0 && !isPartialArchive(path))) continue
    rmSync(path, { recursive: true, force: true })
    removed.push(path)
  }
  return removed
}

export async function writeBackup(o: BackupOptions): Promise<Manifest> {
  // The key that goes into the archive is read now, beside the one its MAC is keyed by and before the
  // database copy, not after the blobs: a master.key replaced meanwhile (a rekey before key-lock.ts, a
  // restore --force, by hand) went in beside a database sealed with the old one, under a MAC by the old one.
  const keyText = o.includeMasterKey ? (o.masterKeyText ?? readFileSync(masterKeyFile(o.dataDir), 'utf8')) : undefined
  const keyWhere = o.masterKeyText ? 'FIXLOOP_MASTER_KEY' : masterKeyFile(o.dataDir)
  if (keyText !== undefined && Buffer.compare(Buffer.from(parseMasterKey(keyText, keyWhere)), Buffer.from(o.masterKey)) !== 0) {
    throw new StartupError(`the master key changed while this backup started (${keyWhere} was replaced); nothing was written: run backup again`)
  }
  const partial = `${o.out}.partial-${process.pid}`
  for (const path of removeKilledBackups(dirname(o.out))) o.progress(`backup: removed ${path}, left by a backup that was killed`)
  // The database copy goes into a directory made for it (mkdtemp: an unpredictable name, owner-only,
  // created atomically), never at a name beside --out that another local user of a shared folder could
  // have created first and kept open: VACUUM INTO fills any empty file it finds, whoever owns it. Its name
  // carries the pid, so that the next backup can tell one a killed backup left.
  const scratch = mkdtempSync(join(dirname(o.out), `.fixloop-backup-${process.pid}-`))
  const snapshot = join(scratch, 'database.sqlite')
  const report = throttled(o.progress)
  const pack = tarPack()
  const sink = createWriteStream(partial, { mode: 0o600, flags: 'wx' })
  const written = pipeline(pack, sink)
  // The archive's file failing (ENOSPC, EDQUOT, EIO) rejects `written` while a file is still being added.
  // Unwatched, that rejection ended the process (exit 1, a crash report) before the cleanup below, leaving
  // the partial archive and the database copy on the disk that had just filled up; every wait races it.
  const sinkFailed = written.then(
    () => new Promise<never>(() => {}),
    (e: unknown) => Promise.reject(e),
  )
  sinkFailed.catch(() => undefined)
  const orSinkFailure = <T>(p: Promise<T>): Promise<T> => Promise.race([p, sinkFailed])
  try {
    report('backup: copying the database (VACUUM INTO)', true)
    // The copy holds the whole database: owner-only from the start (VACUUM INTO fills an empty file).
    closeSync(openSync(snapshot, 'wx', 0o600))
    o.sqlite.query('VACUUM INTO ?').run(snapshot)
    const files: ManifestFile[] = []
    files.push((await orSinkFailure(addFile(pack, DB_ENTRY, snapshot)))!)
    rmSync(scratch, { recursive: true, force: true })
    const blobs = listBlobs(o.dataDir)
    let bytes = 0
    for (const [i, rel] of blobs.entries()) {
      const f = await orSinkFailure(addFile(pack, BLOB_PREFIX + rel, join(o.dataDir, 'blobs', rel)))
      if (f) {
        files.push(f)
        bytes += f.bytes
      }
      report(`backup: ${i + 1}/${blobs.length} blobs, ${humanBytes(bytes)}`, i + 1 === blobs.length)
    }
    if (keyText !== undefined) {
      const data = Buffer.from(keyText.trim() + '\n')
      pack.entry({ name: KEY_ENTRY, size: data.length, mode: 0o600 }, data)
      files.push({ path: KEY_ENTRY, bytes: data.length, sha256: createHash('sha256').update(data).digest('hex') })
    }
    const migrations = (o.sqlite.query('SELECT name FROM __migrations ORDER BY name').all() as { name: string }[]).map((r) => r.name)
    const manifest: Manifest = {
      format: FORMAT,
      formatVersion: FORMAT_VERSION,
      fixloopVersion: VERSION,
      createdAt: new Date().toISOString(),
      migrations,
      storage: o.storage,
      masterKeyIncluded: o.includeMasterKey,
      files,
    }
    // Compact, one file a line: restore reads at most MAX_MANIFEST_BYTES, so no larger one is written.
    const text = Buffer.from(JSON.stringify(manifest).replace(/\},\{"path"/g, '},\n{"path"') + '\n')
    if (text.length > MAX_MANIFEST_BYTES) throw new Error(`the manifest would be ${humanBytes(text.length)} (${files.length} files), over the ${humanBytes(MAX_MANIFEST_BYTES)} restore reads: too many blobs for one archive`)
    pack.entry({ name: MANIFEST_NAME, mode: 0o600 }, text)
    pack.entry({ name: MAC_NAME, mode: 0o600 }, manifestMac(o.masterKey, text))
    pack.finalize()
    await written
    renameSync(partial, o.out)
    return manifest
  } catch (e) {
    pack.destroy()
    await written.catch(() => undefined)
    rmSync(partial, { force: true })
    rmSync(scratch, { recursive: true, force: true })
    throw e
  }
}
