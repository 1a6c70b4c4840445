/**
 * Restores a backup archive into a data dir: refuses a non-empty target unless `force`, takes the data
 * dir lock (never under a running server), then
 *   1. reads only the archive's tar headers (tar-scan.ts) to find the manifest and its MAC, bounded
 *      (MAX_MANIFEST_BYTES), checks the MAC under the master key (mac.ts; see `verifyMac` for which key and
 *      what an archive without a MAC gets), the manifest's format and a schema this binary knows;
 *   2. unpacks into a staging folder inside the target, refusing an entry the manifest does not list or
 *      whose size differs from it BEFORE writing a byte of it, counting bytes while streaming (never more
 *      than the manifest says) and checking each file's SHA-256 as it ends;
 *   3. only then moves the files into place. A damaged or tampered archive changes nothing.
 */
import { createReadStream, createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { createHash } from 'node:crypto'
import { dirname, join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { Transform } from 'node:stream'
import { extract as tarExtract } from 'tar-stream'
import { BLOB_PREFIX, DB_ENTRY, humanBytes, isSafeEntryName, KEY_ENTRY, MAC_NAME, MANIFEST_NAME, MAX_MANIFEST_BYTES, MAX_SMALL_ENTRY_BYTES, parseManifest, throttled, type Manifest, type ManifestFile } from './manifest'
import { macMatches } from './mac'
import { ArchiveRefused, readEntry, scanTar, type ScannedEntry } from './tar-scan'
import { MIGRATIONS } from '../migrations'
import { lockDataDir, LOCK_FILE } from '../data-dir-lock'
import { KEY_LOCK_FILE, lockKeyExclusive, type KeyLock } from '../key-lock'
import { refuseForeign } from '../data-dir'
import { StartupError } from '../../core/startup-error'
import { masterKeyFile, parseMasterKey } from '../../core/master-key'
import { VERSION } from '../../version'

export interface RestoreOptions {
  from: string
  dataDir: string
  force: boolean
  /** Restore an archive whose MAC cannot be checked (none in it, or no master key to check it with). */
  allowUnverified: boolean
  /** FIXLOOP_MASTER_KEY, when set: the first key the MAC is checked with. */
  masterKeyText: string | undefined
  progress: (line: string) => void
}

const DB_FILES = ['fixloop.db', 'fixloop.db-wal', 'fixloop.db-shm']
/** A restore's staging folder inside the data dir (`.restore-<pid>`). */
const STAGING = /^\.restore-\d+$/
/** The lock files (and their journals) a command, a killed restore or a rekey leave: no data of the instance. */
const LOCK_FILES = new Set([LOCK_FILE, `${LOCK_FILE}-journal`, KEY_LOCK_FILE, `${KEY_LOCK_FILE}-journal`])

/**
 * Removes the staging folders of restores that were killed (kill -9, OOM, power loss): each holds a copy of
 * an archive's database and blobs, as large as the archive, and outside the instance's own retention and
 * erasure. Only with the data dir's lock held (restore, serve): then no restore is running there.
 */
export function removeRestoreLeftovers(dataDir: string): string[] {
  if (!existsSync(dataDir)) return []
  const stale = readdirSync(dataDir).filter((n) => STAGING.test(n))
  for (const n of stale) rmSync(join(dataDir, n), { recursive: true, force: true })
  return stale.map((n) => join(dataDir, n))
}
/** More entries than any archive `fixloop backup` can write (its manifest is bounded). */
const MAX_ENTRIES = 1_000_000

/** What the header pass found: the manifest's and MAC's bytes, and the archive's own key if any. */
interface Located {
  manifestBytes: Buffer
  mac: string | null
  archiveKey: string | null
}

async function locate(from: string): Promise<Located> {
  const found = new Map<string, ScannedEntry>()
  let entries = 0
  await scanTar(from, (e) => {
    if (++entries > MAX_ENTRIES) throw new ArchiveRefused(`the archive holds more than ${MAX_ENTRIES} entries: not a fixloop backup`)
    if (!isSafeEntryName(e.name)) throw new ArchiveRefused(`the archive holds an unexpected entry "${e.name}"; not a fixloop backup, or tampered with`)
    if (e.name === MANIFEST_NAME && e.size > MAX_MANIFEST_BYTES) throw new ArchiveRefused(`the archive's manifest.json is ${humanBytes(e.size)}, over the ${humanBytes(MAX_MANIFEST_BYTES)} a fixloop backup writes: refused unread`)
    if ((e.name === MAC_NAME || e.name === KEY_ENTRY) && e.size > MAX_SMALL_ENTRY_BYTES) throw new ArchiveRefused(`the archive's ${e.name} is ${e.size} bytes, over ${MAX_SMALL_ENTRY_BYTES}: not a fixloop backup, or tampered with`)
    if (e.name === MANIFEST_NAME || e.name === MAC_NAME || e.name === KEY_ENTRY) {
      if (found.has(e.name)) throw new ArchiveRefused(`the archive holds "${e.name}" twice`)
      found.set(e.name, e)
    }
  })
  const m = found.get(MANIFEST_NAME)
  if (!m) throw new ArchiveRefused('the archive has no manifest.json: not a fixloop backup, or cut short')
  const text = async (name: string) => {
    const e = found.get(name)
    return e ? (await readEntry(from, e)).toString('utf8') : null
  }
  return { manifestBytes: await readEntry(from, m), mac: await text(MAC_NAME), archiveKey: await text(KEY_ENTRY) }
}

/**
 * Checks the manifest's MAC with the first key there is: FIXLOOP_MASTER_KEY, the target's master.key, or
 * the archive's own master.key (which proves the archive intact, not who made it: anyone holding such an
 * archive holds the key). A MAC that does not match is always refused. With a key at hand, an archive
 * without a MAC (written before fixloop signed its backups, or with the MAC stripped) is refused unless
 * `allowUnverified`. With no key anywhere (the default `backup`, restored before master.key is copied),
 * nothing can be checked, with or without a MAC: the archive is restored with a warning that says how to
 * verify it, as CONTRACT.md's `restore` into an empty data dir requires. Returns the line to report.
 */
function verifyMac(o: RestoreOptions, loc: Located): string {
  const targetKey = masterKeyFile(o.dataDir)
  const source = o.masterKeyText ? { text: o.masterKeyText, where: 'FIXLOOP_MASTER_KEY' } : existsSync(targetKey) ? { text: readFileSync(targetKey, 'utf8'), where: targetKey } : loc.archiveKey ? { text: loc.archiveKey, where: "the archive's own master.key" } : null
  const unverified = (why: string) => {
    if (!o.allowUnverified) throw new StartupError(`${why}; add --allow-unverified to restore it anyway (only an archive you know nobody changed)`)
    return `restore: WARNING: ${why}; restored anyway (--allow-unverified)`
  }
  if (!source) {
    return `restore: WARNING: the archive's MAC was not checked: no master key to check it with (set FIXLOOP_MASTER_KEY, or put the master.key of the instance that wrote it into ${o.dataDir} before restoring, to have it checked)`
  }
  if (loc.mac === null) return unverified('the archive has no MAC (manifest.hmac): it was written by a fixloop that did not sign backups, or the MAC was removed, so its authenticity cannot be checked')
  let key: Uint8Array
  try {
    key = parseMasterKey(source.text, source.where)
  } catch (e) {
    throw new StartupError((e as Error).message)
  }
  if (!macMatches(key, loc.manifestBytes, loc.mac)) {
    throw new StartupError(`the archive's MAC does not match its manifest under the key from ${source.where}: the archive was tampered with, or was written by an instance with another master key (give that key in FIXLOOP_MASTER_KEY)`)
  }
  return `restore: manifest MAC verified with the key from ${source.where}${source.where.startsWith("the archive's") ? ' (proves the archive intact, not who wrote it)' : ''}`
}

function checkMigrations(m: Manifest): void {
  const known = new Set(MIGRATIONS.map((x) => x.name))
  const unknown = m.migrations.filter((n) => !known.has(n))
  if (unknown.length > 0) {
    throw new StartupError(`this backup was made by fixloop ${m.fixloopVersion} with migration ${unknown.join(', ')}, which this fixloop ${VERSION} does not know: restore it with fixloop ${m.fixloopVersion} or newer`)
  }
}

/** Reads a small entry whole (its size was bounded by the header pass). */
function collect(stream: NodeJS.ReadableStream, done: (b: Buffer) => void): void {
  const chunks: Buffer[] = []
  stream.on('data', (c: unknown) => chunks.push(c as Buffer))
  stream.on('end', () => done(Buffer.concat(chunks)))
}

async function unpack(from: string, staging: string, m: Manifest, loc: Located, report: (line: string, final?: boolean) => void): Promise<Set<string>> {
  const listed = new Map<string, ManifestFile>(m.files.map((f) => [f.path, f]))
  const seen = new Set<string>()
  let total = 0
  // The first refusal stops the read at once (the rest of the archive is never read, let alone written);
  // it is thrown when the pipeline ends (handing it to tar-stream's next() would surface as an unhandled
  // stream error as well).
  let refusal: StartupError | undefined
  const source = createReadStream(from)
  const ex = tarExtract()
  // A refusal destroys the streams with its error, and the extractor passes it on to the open entry's
  // stream a tick later, which can be after every pipeline listening to that stream has settled. Without
  // a listener of our own that late emit is an uncaught error (exit 1 and a crash report instead of the
  // refusal). The error itself is not lost: it is `refusal`, or the pipeline's rejection below.
  const ignoreLateError = () => {}
  source.on('error', ignoreLateError)
  ex.on('error', ignoreLateError)
  const stop = (e: StartupError) => {
    refusal ??= e
    source.destroy(e)
    // The extractor too: a refusal found after the file was read to its end (a small archive, a checksum
    // known only when an entry ends) would otherwise leave the pipeline waiting for a next() that never
    // comes, and with nothing else pending the process ends with exit 0, as if the restore had worked.
    ex.destroy(e)
  }
  ex.on('entry', (header, stream, next) => {
    stream.on('error', ignoreLateError)
    const name = header.name
    const fail = (msg: string) => {
      stop(new StartupError(msg))
      stream.resume()
    }
    if (header.type !== 'file') return fail(`the archive holds an unexpected ${header.type} entry "${name}"`)
    if (seen.has(name)) return fail(`the archive holds "${name}" twice`)
    seen.add(name)
    if (name === MANIFEST_NAME || name === MAC_NAME) {
      const expected = name === MANIFEST_NAME ? loc.manifestBytes : Buffer.from(loc.mac ?? '')
      if (header.size !== expected.length) return fail(`the archive's ${name} is not the one its headers showed: tampered with`)
      return collect(stream as unknown as NodeJS.ReadableStream, (b) => {
        if (!b.equals(expected)) return stop(new StartupError(`the archive's ${name} is not the one its headers showed: tampered with`))
        next()
      })
    }
    // Refused before a byte is written: an entry the (verified) manifest does not list, or of another size.
    const want = listed.get(name)
    if (!want) return fail(`the archive holds ${name}, which its manifest does not list: tampered with`)
    if (header.size !== want.bytes) return fail(`the archive is damaged: ${name} is ${header.size} bytes, its manifest says ${want.bytes}`)
    const target = join(staging, name)
    mkdirSync(dirname(target), { recursive: true, mode: 0o700 })
    const hash = createHash('sha256')
    let bytes = 0
    const bounded = new Transform({
      transform(chunk: Buffer, _enc, done) {
        bytes += chunk.length
        if (bytes > want.bytes) return done(new StartupError(`the archive is damaged: ${name} runs past the ${want.bytes} bytes its manifest says`))
        hash.update(chunk)
        done(null, chunk)
      },
    })
    pipeline(stream, bounded, createWriteStream(target, { mode: 0o600 }))
      .then(() => {
        if (bytes !== want.bytes || hash.digest('hex') !== want.sha256) return stop(new StartupError(`the archive is damaged: ${name} does not match its checksum in the manifest`))
        total += bytes
        report(`restore: ${seen.size} files, ${humanBytes(total)}`)
        next()
      })
      .catch((e) => stop(e instanceof StartupError ? e : new StartupError(`cannot write ${target}: ${(e as Error).message}`)))
  })
  try {
    await pipeline(source, ex as unknown as NodeJS.WritableStream)
  } catch (e) {
    throw refusal ?? new StartupError(`${from} is not a readable tar archive: ${(e as Error).message}`)
  }
  if (refusal) throw refusal
  for (const f of m.files) if (!seen.has(f.path)) throw new StartupError(`the archive is incomplete: ${f.path} is listed in the manifest but missing`)
  if (!seen.has(MANIFEST_NAME)) throw new StartupError('the archive changed while it was read: manifest.json is gone')
  return seen
}

export async function restoreBackup(o: RestoreOptions): Promise<Manifest> {
  if (!existsSync(o.from)) throw new StartupError(`${o.from} does not exist`)
  // An existing target another user owns (or with their master.key in it) is refused like every open of a
  // data dir: its owner could read or swap what is restored, and their key would check the MAC.
  if (existsSync(o.dataDir)) refuseForeign(o.dataDir)
  // A master.key alone does not count: putting the key there first is how a restore gets it to check the MAC.
  // Nor what a killed restore leaves (its staging folder, the lock's journal): a retry just works.
  const present = existsSync(o.dataDir) ? readdirSync(o.dataDir).filter((n) => !LOCK_FILES.has(n) && n !== 'master.key' && !STAGING.test(n)) : []
  if (present.length > 0 && !o.force) {
    throw new StartupError(`${o.dataDir} is not empty (${present.slice(0, 3).join(', ')}${present.length > 3 ? ', ...' : ''}); restore into an empty dir, or add --force to replace its database, blobs and master key`)
  }
  const created = !existsSync(o.dataDir)
  mkdirSync(o.dataDir, { recursive: true, mode: 0o700 })
  let done = false
  const lock = lockDataDir(o.dataDir, 'restoring into it')
  // The master key and the database are replaced: no admin command or backup may be between reading the old
  // key and writing with it (key-lock.ts), as for a rekey. Waits for them, then refuses.
  let keyLock: KeyLock | undefined
  const staging = join(o.dataDir, `.restore-${process.pid}`)
  const report = throttled(o.progress)
  try {
    keyLock = lockKeyExclusive(o.dataDir, 'restore')
    for (const dir of removeRestoreLeftovers(o.dataDir)) o.progress(`restore: removed ${dir}, left by a restore that was killed`)
    mkdirSync(staging, { mode: 0o700 })
    report(`restore: reading ${o.from}`, true)
    let loc: Located
    try {
      loc = await locate(o.from)
    } catch (e) {
      throw e instanceof ArchiveRefused ? new StartupError(e.message) : new StartupError(`${o.from} is not a readable tar archive: ${(e as Error).message}`)
    }
    o.progress(verifyMac(o, loc))
    let manifest: Manifest
    try {
      manifest = parseManifest(loc.manifestBytes.toString('utf8'))
    } catch (e) {
      throw new StartupError((e as Error).message)
    }
    if (!manifest.files.some((f) => f.path === DB_ENTRY)) throw new StartupError('the archive holds no database')
    checkMigrations(manifest)
    const seen = await unpack(o.from, staging, manifest, loc, report)
    report('restore: checksums verified; moving files into place', true)
    for (const f of DB_FILES) rmSync(join(o.dataDir, f), { force: true })
    rmSync(join(o.dataDir, 'blobs'), { recursive: true, force: true })
    renameSync(join(staging, DB_ENTRY), join(o.dataDir, DB_ENTRY))
    if (existsSync(join(staging, 'blobs'))) renameSync(join(staging, 'blobs'), join(o.dataDir, 'blobs'))
    if (seen.has(KEY_ENTRY)) renameSync(join(staging, KEY_ENTRY), join(o.dataDir, KEY_ENTRY))
    report(`restore: done (${seen.size} files; ${[...seen.keys()].filter((n) => n.startsWith(BLOB_PREFIX)).length} blobs)`, true)
    done = true
    return manifest
  } finally {
    rmSync(staging, { recursive: true, force: true })
    keyLock?.release()
    lock.release()
    // A refused restore leaves no trace: not even the dir it made or its lock files.
    if (!done && created) rmSync(o.dataDir, { recursive: true, force: true })
    else if (!done && present.length === 0) for (const f of LOCK_FILES) rmSync(join(o.dataDir, f), { force: true })
  }
}
