/**
 * Restores a backup archive into a data dir: refuses a non-empty target unless `force`, takes the data
 * dir lock (never under a running server), unpacks into a staging folder inside the target while hashing
 * every entry, checks the manifest (format, every file's size and SHA-256, nothing extra or missing, a
 * schema this binary knows), and only then moves the files into place. A damaged archive changes nothing.
 */
import { createReadStream, createWriteStream, existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs'
import { createHash } from 'node:crypto'
import { dirname, join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { Transform } from 'node:stream'
import { extract as tarExtract } from 'tar-stream'
import { BLOB_PREFIX, DB_ENTRY, humanBytes, isSafeEntryName, KEY_ENTRY, MANIFEST_NAME, parseManifest, throttled, type Manifest } from './manifest'
import { MIGRATIONS } from '../migrations'
import { lockDataDir, LOCK_FILE } from '../data-dir-lock'
import { StartupError } from '../../core/startup-error'
import { VERSION } from '../../version'

export interface RestoreOptions {
  from: string
  dataDir: string
  force: boolean
  progress: (line: string) => void
}

const DB_FILES = ['fixloop.db', 'fixloop.db-wal', 'fixloop.db-shm']

interface Unpacked {
  manifestText: string | undefined
  seen: Map<string, { bytes: number; sha256: string }>
}

async function unpack(from: string, staging: string, report: (line: string, final?: boolean) => void): Promise<Unpacked> {
  const seen = new Map<string, { bytes: number; sha256: string }>()
  let manifestText: string | undefined
  let total = 0
  // The first refusal; later entries are drained unread and the error is thrown once the stream ends
  // (handing it to tar-stream's next() would surface as an unhandled stream error as well).
  let refusal: StartupError | undefined
  const ex = tarExtract()
  ex.on('entry', (header, stream, next) => {
    const name = header.name
    const fail = (msg: string) => {
      refusal ??= new StartupError(msg)
      stream.on('end', () => next())
      stream.resume()
    }
    if (refusal) return fail(refusal.message)
    if (header.type !== 'file') return fail(`the archive holds an unexpected ${header.type} entry "${name}"`)
    if (!isSafeEntryName(name)) return fail(`the archive holds an unexpected entry "${name}"; not a fixloop backup, or tampered with`)
    if (seen.has(name) || (name === MANIFEST_NAME && manifestText !== undefined)) return fail(`the archive holds "${name}" twice`)
    if (name === MANIFEST_NAME) {
      const chunks: Buffer[] = []
      stream.on('data', (c: unknown) => chunks.push(c as Buffer))
      stream.on('end', () => {
        manifestText = Buffer.concat(chunks).toString('utf8')
        next()
      })
      return
    }
    const target = join(staging, name)
    mkdirSync(dirname(target), { recursive: true, mode: 0o700 })
    const hash = createHash('sha256')
    let bytes = 0
    const hasher = new Transform({
      transform(chunk: Buffer, _enc, done) {
        hash.update(chunk)
        bytes += chunk.length
        done(null, chunk)
      },
    })
    pipeline(stream, hasher, createWriteStream(target, { mode: 0o600 }))
      .then(() => {
        seen.set(name, { bytes, sha256: hash.digest('hex') })
        total += bytes
        report(`restore: ${seen.size} files, ${humanBytes(total)}`)
        next()
      })
      .catch((e) => {
        refusal ??= new StartupError(`cannot write ${target}: ${(e as Error).message}`)
        next()
      })
  })
  try {
    await pipeline(createReadStream(from), ex as unknown as NodeJS.WritableStream)
  } catch (e) {
    throw refusal ?? new StartupError(`${from} is not a readable tar archive: ${(e as Error).message}`)
  }
  if (refusal) throw refusal
  return { manifestText, seen }
}

function verify(m: Manifest, seen: Unpacked['seen']): void {
  const listed = new Set(m.files.map((f) => f.path))
  for (const f of m.files) {
    const got = seen.get(f.path)
    if (!got) throw new StartupError(`the archive is incomplete: ${f.path} is listed in the manifest but missing`)
    if (got.bytes !== f.bytes || got.sha256 !== f.sha256) throw new StartupError(`the archive is damaged: ${f.path} does not match its checksum in the manifest`)
  }
  for (const name of seen.keys()) if (!listed.has(name)) throw new StartupError(`the archive holds ${name}, which its manifest does not list`)
  if (!seen.has(DB_ENTRY)) throw new StartupError('the archive holds no database')
  const known = new Set(MIGRATIONS.map((x) => x.name))
  const unknown = m.migrations.filter((n) => !known.has(n))
  if (unknown.length > 0) {
    throw new StartupError(`this backup was made by fixloop ${m.fixloopVersion} with migration ${unknown.join(', ')}, which this fixloop ${VERSION} does not know: restore it with fixloop ${m.fixloopVersion} or newer`)
  }
}

export async function restoreBackup(o: RestoreOptions): Promise<Manifest> {
  if (!existsSync(o.from)) throw new StartupError(`${o.from} does not exist`)
  const present = existsSync(o.dataDir) ? readdirSync(o.dataDir).filter((n) => n !== LOCK_FILE) : []
  if (present.length > 0 && !o.force) {
    throw new StartupError(`${o.dataDir} is not empty (${present.slice(0, 3).join(', ')}${present.length > 3 ? ', ...' : ''}); restore into an empty dir, or add --force to replace its database, blobs and master key`)
  }
  const created = !existsSync(o.dataDir)
  mkdirSync(o.dataDir, { recursive: true, mode: 0o700 })
  let done = false
  const lock = lockDataDir(o.dataDir, 'restoring into it')
  const staging = join(o.dataDir, `.restore-${process.pid}`)
  const report = throttled(o.progress)
  try {
    rmSync(staging, { recursive: true, force: true })
    mkdirSync(staging, { mode: 0o700 })
    report(`restore: reading ${o.from}`, true)
    const { manifestText, seen } = await unpack(o.from, staging, report)
    if (manifestText === undefined) throw new StartupError('the archive has no manifest.json: not a fixloop backup, or cut short')
    let manifest: Manifest
    try {
      manifest = parseManifest(manifestText)
    } catch (e) {
      throw new StartupError((e as Error).message)
    }
    verify(manifest, seen)
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
    lock.release()
    // A refused restore leaves no trace: not even the dir it made or its lock file.
    if (!done && created) rmSync(o.dataDir, { recursive: true, force: true })
    else if (!done && present.length === 0) rmSync(join(o.dataDir, LOCK_FILE), { force: true })
  }
}
