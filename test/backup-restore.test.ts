/**
 * Backup and restore through the compiled binary: one archive with the database, the uploaded blobs and a
 * manifest; restore checks it and refuses what it must; a restored server serves the same downloads.
 */
import { describe, expect, test, beforeAll, afterAll } from 'bun:test'
import { chmodSync, chownSync, closeSync, createReadStream, existsSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, writeFileSync, writeSync, rmSync } from 'node:fs'
import { createHash, randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { symlinkSync } from 'node:fs'
import { pipeline } from 'node:stream/promises'
import { extract } from 'tar-stream'
import { BINARY, call, runBinary, spawnServer, tempDir } from './harness'
import { manifestMac } from '../src/db/backup/mac'
import { parseMasterKey } from '../src/core/master-key'
import { cliTenant, ensureBinary } from './helpers-lifecycle'
import { PNG, serveExpectingExit, submitWithScreenshot } from './ops-helpers'

let dataDir: string
let t: Awaited<ReturnType<typeof cliTenant>>
let feedbackId: string
let work: string

beforeAll(async () => {
  ensureBinary()
  dataDir = tempDir()
  work = tempDir('fixloop-backup-')
  t = await cliTenant(dataDir)
  const server = await spawnServer(dataDir)
  try {
    feedbackId = (await submitWithScreenshot(server.url, t.pub)).feedbackId
  } finally {
    await server.stop()
  }
}, 60_000)
afterAll(() => {
  rmSync(dataDir, { recursive: true, force: true })
  rmSync(work, { recursive: true, force: true })
})

async function download(base: string, id: string, key: string): Promise<Uint8Array> {
  const item = await call(base, 'GET', `/v1/feedback/${id}`, { auth: key })
  expect(item.status).toBe(200)
  const res = await fetch(item.body.attachments[0].url)
  expect(res.status).toBe(200)
  return new Uint8Array(await res.arrayBuffer())
}

describe('backup → restore round trip with uploads', () => {
  test('the archive holds the database, the blobs and a manifest; restored into a new dir, the download works', async () => {
    // Backup while the server runs (VACUUM INTO is an online copy).
    const server = await spawnServer(dataDir)
    const out = join(work, 'full.tar')
    try {
      const r = await runBinary(['backup', '--out', out, '--data-dir', dataDir, '--include-master-key', '--json'])
      expect(r.code).toBe(0)
      const res = JSON.parse(r.stdout)
      expect(res).toMatchObject({ backup: out, masterKeyIncluded: true })
      expect(res.blobs).toBeGreaterThanOrEqual(1)
      expect(r.stderr).toContain('contains the master key')
      expect(r.stderr).toContain('0600')
    } finally {
      await server.stop()
    }
    expect(statSync(out).mode & 0o777).toBe(0o600)
    // A plain tar that any tool can list; the manifest comes last, then its MAC.
    const listing = Bun.spawnSync(['tar', 'tf', out]).stdout.toString().trim().split('\n')
    expect(listing[0]).toBe('fixloop.db')
    expect(listing.slice(-2)).toEqual(['manifest.json', 'manifest.hmac'])
    expect(listing).toContain('master.key')
    expect(listing.some((n) => n.startsWith('blobs/') && !n.endsWith('.type'))).toBe(true)
    const manifest = JSON.parse(Bun.spawnSync(['tar', 'xOf', out, 'manifest.json']).stdout.toString())
    expect(manifest.format).toBe('fixloop-backup')
    expect(manifest.migrations).toContain('0009_ops')
    for (const f of manifest.files) expect(f.sha256).toMatch(/^[0-9a-f]{64}$/)

    const restored = join(work, 'restored')
    const rr = await runBinary(['restore', '--from', out, '--data-dir', restored, '--json'])
    expect(rr.code).toBe(0)
    expect(JSON.parse(rr.stdout).masterKeyIncluded).toBe(true)
    expect(rr.stderr).toContain('checksums verified')
    expect(readFileSync(join(restored, 'master.key'), 'utf8')).toBe(readFileSync(join(dataDir, 'master.key'), 'utf8'))
    const second = await spawnServer(restored)
    try {
      expect((await call(second.url, 'GET', '/readyz')).status).toBe(200)
      expect(await download(second.url, feedbackId, t.key)).toEqual(PNG)
      // Signing secrets came back readable: a minted token is accepted.
      const token = await call(second.url, 'POST', `/v1/tokens/mint?appId=${t.appId}`, { auth: t.key, body: { sub: 'u1' } })
      expect(token.status).toBe(200)
    } finally {
      await second.stop()
    }
  }, 60_000)

  test('without --include-master-key the key stays out; the restored dir refuses to start until master.key is copied', async () => {
    const out = join(work, 'nokey.tar')
    const r = await runBinary(['backup', '--out', out, '--data-dir', dataDir])
    expect(r.code).toBe(0)
    expect(Bun.spawnSync(['tar', 'tf', out]).stdout.toString()).not.toContain('master.key')
    const restored = join(work, 'restored-nokey')
    // No key anywhere (the contract's plain restore into an empty dir): restored, with a warning that the
    // MAC could not be checked and how to have it checked.
    const unverifiable = await runBinary(['restore', '--from', out, '--data-dir', join(work, 'restored-unchecked')])
    expect(unverifiable.code).toBe(0)
    expect(unverifiable.stderr).toContain("the archive's MAC was not checked: no master key to check it with")
    // The key given for the restore only (FIXLOOP_MASTER_KEY): verified, restored, and master.key stays out.
    const rr = await runBinary(['restore', '--from', out, '--data-dir', restored], { FIXLOOP_MASTER_KEY: readFileSync(join(dataDir, 'master.key'), 'utf8').trim() })
    expect(rr.code).toBe(0)
    expect(rr.stderr).toContain('manifest MAC verified with the key from FIXLOOP_MASTER_KEY')
    expect(rr.stderr).toContain('has no master key')
    const refused = await serveExpectingExit(restored)
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain('master.key is missing')
    // No new key was generated behind the operator's back.
    expect(existsSync(join(restored, 'master.key'))).toBe(false)
    // A wrong key is refused too, naming the fix.
    writeFileSync(join(restored, 'master.key'), 'ab'.repeat(32) + '\n', { mode: 0o600 })
    const wrong = await serveExpectingExit(restored)
    expect(wrong.code).toBe(2)
    expect(wrong.stderr).toContain('not the key this database')
    expect(wrong.stderr).toContain('fixloop rekey')
    // The right key: it starts and serves the screenshot.
    writeFileSync(join(restored, 'master.key'), readFileSync(join(dataDir, 'master.key')), { mode: 0o600 })
    const server = await spawnServer(restored)
    try {
      expect(await download(server.url, feedbackId, t.key)).toEqual(PNG)
    } finally {
      await server.stop()
    }
  }, 60_000)

  test('restore refuses a non-empty target without --force, and replaces it with --force', async () => {
    const out = join(work, 'force.tar')
    expect((await runBinary(['backup', '--out', out, '--data-dir', dataDir, '--include-master-key'])).code).toBe(0)
    const target = join(work, 'occupied')
    mkdirSync(target)
    writeFileSync(join(target, 'fixloop.db'), 'not a database')
    const refused = await runBinary(['restore', '--from', out, '--data-dir', target])
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain('not empty')
    expect(readFileSync(join(target, 'fixloop.db'), 'utf8')).toBe('not a database')
    const forced = await runBinary(['restore', '--from', out, '--data-dir', target, '--force'])
    expect(forced.code).toBe(0)
    expect(readFileSync(join(target, 'fixloop.db')).subarray(0, 15).toString()).toBe('SQLite format 3')
  }, 60_000)

  test('a damaged or foreign archive changes nothing', async () => {
    const out = join(work, 'damaged.tar')
    expect((await runBinary(['backup', '--out', out, '--data-dir', dataDir])).code).toBe(0)
    // Flip one byte inside the database entry (after the 512-byte tar header).
    const bytes = readFileSync(out)
    bytes[512 + 2000] ^= 0xff
    writeFileSync(out, bytes)
    const target = join(work, 'from-damaged')
    const r = await runBinary(['restore', '--from', out, '--data-dir', target], { FIXLOOP_MASTER_KEY: readFileSync(join(dataDir, 'master.key'), 'utf8').trim() })
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('does not match its checksum')
    expect(existsSync(join(target, 'fixloop.db'))).toBe(false)

    const foreign = join(work, 'foreign.tar')
    const src = join(work, 'foreign-src')
    mkdirSync(src)
    writeFileSync(join(src, 'notes.txt'), 'hello')
    Bun.spawnSync(['tar', 'cf', foreign, '-C', src, 'notes.txt'])
    const f = await runBinary(['restore', '--from', foreign, '--data-dir', join(work, 'from-foreign')])
    expect(f.code).toBe(2)
    expect(f.stderr).toContain('unexpected entry')
    expect(existsSync(join(work, 'from-foreign'))).toBe(false)
  }, 60_000)

  // A checksum refusal found when the LAST data entry ends, when the archive has usually been read to its
  // end: the refusal must still end the restore with exit 2, every time. (A restore once exited 0 after a
  // refusal, in CI; restore.ts now also destroys the extractor. This guards the outcome; it did not
  // reproduce that race on demand.)
  test('a damaged last blob (refused after the archive was read to its end) exits 2', async () => {
    const out = join(work, 'damaged-last.tar')
    expect((await runBinary(['backup', '--out', out, '--data-dir', dataDir])).code).toBe(0)
    const bytes = readFileSync(out)
    let last: { offset: number; size: number } | undefined
    for (let at = 0; at + 512 <= bytes.length; ) {
      const name = bytes.subarray(at, at + 100).toString('utf8').replace(/\0.*$/s, '')
      if (!name) break
      const size = parseInt(bytes.subarray(at + 124, at + 136).toString('utf8').replace(/\0.*$/s, '').trim() || '0', 8)
      if (name.startsWith('blobs/') && size > 0) last = { offset: at + 512, size }
      at += 512 + Math.ceil(size / 512) * 512
    }
    expect(last).toBeDefined()
    bytes[last!.offset + last!.size - 1] ^= 0xff
    writeFileSync(out, bytes)
    const key = { FIXLOOP_MASTER_KEY: readFileSync(join(dataDir, 'master.key'), 'utf8').trim() }
    for (let i = 0; i < 5; i++) {
      const target = join(work, `from-damaged-last-${i}`)
      const r = await runBinary(['restore', '--from', out, '--data-dir', target], key)
      expect({ code: r.code, said: /does not match its checksum/.test(r.stderr) }).toEqual({ code: 2, said: true })
      expect(existsSync(join(target, 'fixloop.db'))).toBe(false)
    }
  }, 60_000)

  test("in a folder others may write to, the database copy never lands in a file another user made first", async () => {
    // What another local user of a shared folder (/tmp) could do: create, ahead of the backup, empty
    // world-readable files at every name the copy could take beside --out, and keep reading them.
    const shared = join(work, 'shared')
    mkdirSync(shared, { mode: 0o1777 })
    const out = join(shared, 'nightly.tar')
    const next = Number(readFileSync('/proc/sys/kernel/ns_last_pid', 'utf8'))
    const planted: string[] = []
    for (let pid = next + 1; pid <= next + 300; pid++) {
      const path = `${out}.db-${pid}`
      closeSync(openSync(path, 'wx', 0o666))
      planted.push(path)
    }
    const r = await runBinary(['backup', '--out', out, '--data-dir', dataDir])
    expect(r.code).toBe(0)
    expect(statSync(out).mode & 0o777).toBe(0o600)
    // Every planted file is as empty as it was made, and the copy's own folder is gone.
    for (const path of planted) expect(statSync(path).size).toBe(0)
    expect(readdirSync(shared).filter((f) => f.startsWith('.fixloop-backup-'))).toEqual([])
  })

  test('backup refuses a missing data dir and creates nothing', async () => {
    const ghost = join(work, 'ghost')
    const r = await runBinary(['backup', '--out', join(work, 'ghost.tar'), '--data-dir', ghost])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('does not exist')
    expect(existsSync(ghost)).toBe(false)
    expect(existsSync(join(work, 'ghost.tar'))).toBe(false)
  })
})

test('rekey re-seals every secret; the old key is then refused and the new one works', async () => {
  ensureBinary()
  const dir = tempDir()
  const tt = await cliTenant(dir)
  const oldKeyFile = join(dir, 'old.key')
  writeFileSync(oldKeyFile, readFileSync(join(dir, 'master.key')))
  const newKeyFile = join(tempDir(), 'new.key')
  const r = await runBinary(['rekey', '--old-key-file', oldKeyFile, '--new-key-file', newKeyFile, '--data-dir', dir, '--json'])
  expect(r.code).toBe(0)
  const out = JSON.parse(r.stdout)
  expect(out.resealed['apps.signing_secret_enc']).toBe(1)
  expect(out.keyFileReplaced).toBe(true)
  expect(statSync(newKeyFile).mode & 0o777).toBe(0o600)
  expect(readFileSync(join(dir, 'master.key'), 'utf8')).toBe(readFileSync(newKeyFile, 'utf8'))
  // Running it again with the (now wrong) old key changes nothing.
  const again = await runBinary(['rekey', '--old-key-file', oldKeyFile, '--new-key-file', newKeyFile, '--data-dir', dir])
  expect(again.code).toBe(2)
  // A key file of one's own that others may read (umask 022) is made owner-only, with a notice.
  const readable = join(tempDir(), 'readable.key')
  writeFileSync(readable, randomBytes(32).toString('hex') + '\n')
  chmodSync(readable, 0o644)
  const loose = await runBinary(['rekey', '--old-key-file', oldKeyFile, '--new-key-file', readable, '--data-dir', dir])
  expect(loose.stderr).toContain('was open to other users (mode 644); it is owner-only now (0600)')
  expect(statSync(readable).mode & 0o777).toBe(0o600)
  // One another user made (planted in a shared folder ahead of the rekey) is refused: it would re-key the
  // instance to a key they know. (Root can hand a file to another user; others skip this part.)
  if (process.getuid?.() === 0) {
    const planted = join(tempDir(), 'planted.key')
    writeFileSync(planted, randomBytes(32).toString('hex') + '\n', { mode: 0o600 })
    chownSync(planted, 65534, 65534)
    const refused = await runBinary(['rekey', '--old-key-file', join(dir, 'master.key'), '--new-key-file', planted, '--data-dir', dir])
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain('belongs to another user (uid 65534)')
    expect(readFileSync(join(dir, 'master.key'), 'utf8')).toBe(readFileSync(newKeyFile, 'utf8'))
  }
  // Starts with the new key; the signing secret still verifies (a token is minted and accepted).
  const server = await spawnServer(dir)
  try {
    const token = await call(server.url, 'POST', `/v1/tokens/mint?appId=${tt.appId}`, { auth: tt.key, body: { sub: 'u' } })
    expect(token.status).toBe(200)
  } finally {
    await server.stop()
  }
  // The old key is refused at start.
  writeFileSync(join(dir, 'master.key'), readFileSync(oldKeyFile))
  const refused = await serveExpectingExit(dir)
  expect(refused.code).toBe(2)
  expect(refused.stderr).toContain('not the key this database')
}, 60_000)

/** Every entry of a (small) archive, in order. */
async function readEntries(file: string): Promise<{ name: string; data: Buffer }[]> {
  const out: { name: string; data: Buffer }[] = []
  const ex = extract()
  ex.on('entry', (h, stream, next) => {
    const chunks: Buffer[] = []
    stream.on('data', (c: unknown) => chunks.push(c as Buffer))
    stream.on('end', () => {
      out.push({ name: h.name, data: Buffer.concat(chunks) })
      next()
    })
  })
  await pipeline(createReadStream(file), ex as unknown as NodeJS.WritableStream)
  return out
}

/** A POSIX ustar header for a regular file, as `fixloop backup` writes them. */
function ustarHeader(name: string, size: number): Buffer {
  const h = Buffer.alloc(512)
  h.write(name, 0, 'utf8')
  h.write('0000600\0', 100)
  h.write('0000000\0', 108)
  h.write('0000000\0', 116)
  h.write(size.toString(8).padStart(11, '0') + '\0', 124)
  h.write('00000000000\0', 136)
  h.write('        ', 148)
  h.write('0', 156)
  h.write('ustar\0', 257)
  h.write('00', 263)
  let sum = 0
  for (const b of h) sum += b
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148)
  return h
}

/**
 * Writes an archive entry by entry at explicit offsets; an entry given as `{ hole }` gets a header and
 * that many bytes of data left as a hole in a sparse file (no disk used).
 */
function writeEntries(file: string, entries: ({ name: string; data: Buffer } | { name: string; hole: number })[]): void {
  const fd = openSync(file, 'w', 0o600)
  try {
    let at = 0
    for (const e of entries) {
      const size = 'data' in e ? e.data.length : e.hole
      writeSync(fd, ustarHeader(e.name, size), 0, 512, at)
      if ('data' in e && size > 0) writeSync(fd, e.data, 0, size, at + 512)
      at += 512 + Math.ceil(size / 512) * 512
    }
    writeSync(fd, Buffer.alloc(1024), 0, 1024, at)
  } finally {
    closeSync(fd)
  }
}

describe('restore refuses a tampered or oversized archive early, and writes nothing it has not checked', () => {
  let good: string
  let key: string
  let entries: { name: string; data: Buffer }[]
  const withKey = () => ({ FIXLOOP_MASTER_KEY: key })
  beforeAll(async () => {
    good = join(work, 'to-tamper.tar')
    expect((await runBinary(['backup', '--out', good, '--data-dir', dataDir])).code).toBe(0)
    key = readFileSync(join(dataDir, 'master.key'), 'utf8').trim()
    entries = await readEntries(good)
    expect(entries.map((e) => e.name).slice(-2)).toEqual(['manifest.json', 'manifest.hmac'])
  })

  const manifestOf = () => JSON.parse(entries.find((e) => e.name === 'manifest.json')!.data.toString())
  const blobName = () => entries.find((e) => e.name.startsWith('blobs/'))!.name
  const sign = (k: Uint8Array, manifest: Buffer) => ({ name: 'manifest.hmac', data: Buffer.from(manifestMac(k, manifest)) })
  const realKey = () => parseMasterKey(key, 'test')
  /** The archive with one blob replaced and the manifest recomputed to match it (self-consistent). */
  const rewritten = (newBlob: Buffer) => {
    const m = manifestOf()
    const f = m.files.find((x: { path: string }) => x.path === blobName())
    f.bytes = newBlob.length
    f.sha256 = createHash('sha256').update(newBlob).digest('hex')
    const manifest = Buffer.from(JSON.stringify(m))
    const body = entries.filter((e) => !e.name.startsWith('manifest.')).map((e) => (e.name === blobName() ? { name: e.name, data: newBlob } : e))
    return { body, manifest }
  }
  const mac = () => entries.find((e) => e.name === 'manifest.hmac')!

  const cases: [string, () => Parameters<typeof writeEntries>[1], string[], RegExp][] = [
    ['a blob rewritten and its checksum recomputed in the manifest, the MAC kept', () => {
      const { body, manifest } = rewritten(Buffer.from('not the screenshot'))
      return [...body, { name: 'manifest.json', data: manifest }, mac()]
    }, [], /MAC does not match its manifest under the key from FIXLOOP_MASTER_KEY: the archive was tampered with/],
    ['the same, the MAC recomputed with another key', () => {
      const { body, manifest } = rewritten(Buffer.from('not the screenshot'))
      return [...body, { name: 'manifest.json', data: manifest }, sign(new Uint8Array(32).fill(7), manifest)]
    }, [], /MAC does not match its manifest/],
    ['the MAC entry removed (an archive from before MACs, or stripped)', () => entries.filter((e) => e.name !== 'manifest.hmac'), [], /the archive has no MAC \(manifest\.hmac\).*--allow-unverified/],
    ['an unlisted 1 GiB entry before the manifest', () => [...entries.slice(0, -2), { name: 'blobs/zz/unlisted', hole: 1024 ** 3 }, ...entries.slice(-2)], [], /holds blobs\/zz\/unlisted, which its manifest does not list/],
    ['a listed blob grown to 1 GiB in the tar (manifest and MAC still those of the backup)', () => entries.map((e) => (e.name === blobName() ? { name: e.name, hole: 1024 ** 3 } : e)), [], /is 1073741824 bytes, its manifest says \d+/],
    ['a 100 MiB manifest.json', () => [...entries.slice(0, -2), { name: 'manifest.json', hole: 100 * 1024 * 1024 }, entries.at(-1)!], [], /manifest\.json is 100\.0 MB, over the 64\.0 MB a fixloop backup writes: refused unread/],
  ]
  for (const [name, build, flags, message] of cases) {
    test(`${name}: refused, nothing restored, nothing over 64 MiB written`, async () => {
      const file = join(work, `tampered-${cases.findIndex((c) => c[0] === name)}.tar`)
      writeEntries(file, build())
      const target = join(work, `from-tampered-${cases.findIndex((c) => c[0] === name)}`)
      // RLIMIT_FSIZE 64 MiB: a restore that wrote an oversized entry before refusing it would die (SIGXFSZ) or fail to write.
      const proc = Bun.spawn(['prlimit', '--fsize=67108864', BINARY, 'restore', '--from', file, '--data-dir', target, ...flags], { env: { PATH: process.env.PATH ?? '', ...withKey() }, stdout: 'pipe', stderr: 'pipe' })
      const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited])
      expect({ code, stderr: stderr.trim().split('\n').at(-1) }).toEqual({ code: 2, stderr: expect.stringMatching(message) })
      expect(existsSync(target)).toBe(false)
    }, 60_000)
  }

  test('an archive without a MAC restores with --allow-unverified, saying so; a MAC that does not match never does', async () => {
    const stripped = join(work, 'stripped.tar')
    writeEntries(stripped, entries.filter((e) => e.name !== 'manifest.hmac'))
    const r = await runBinary(['restore', '--from', stripped, '--data-dir', join(work, 'from-stripped'), '--allow-unverified'], withKey())
    expect(r.code).toBe(0)
    expect(r.stderr).toContain('WARNING: the archive has no MAC')
    const { body, manifest } = rewritten(Buffer.from('forged'))
    const forged = join(work, 'forged.tar')
    writeEntries(forged, [...body, { name: 'manifest.json', data: manifest }, mac()])
    const f = await runBinary(['restore', '--from', forged, '--data-dir', join(work, 'from-forged'), '--allow-unverified'], withKey())
    expect(f.code).toBe(2)
    expect(f.stderr).toContain('MAC does not match')
    // The archive's own key, put into the target first, verifies an untampered archive.
    const target = join(work, 'key-first')
    mkdirSync(target)
    writeFileSync(join(target, 'master.key'), key + '\n', { mode: 0o600 })
    const k = await runBinary(['restore', '--from', good, '--data-dir', target])
    expect(k.code).toBe(0)
    expect(k.stderr).toContain(`manifest MAC verified with the key from ${join(target, 'master.key')}`)
    // A manifest re-signed with the real key (an archive damaged, not forged) still has every size checked.
    const resigned = join(work, 'resigned.tar')
    const { body: b2, manifest: m2 } = rewritten(Buffer.from('x'.repeat(10)))
    writeEntries(resigned, [...b2.map((e) => (e.name === blobName() ? { name: e.name, data: Buffer.from('y'.repeat(10)) } : e)), { name: 'manifest.json', data: m2 }, sign(realKey(), m2)])
    const d = await runBinary(['restore', '--from', resigned, '--data-dir', join(work, 'from-resigned')], withKey())
    expect(d.code).toBe(2)
    expect(d.stderr).toContain('does not match its checksum')
  }, 60_000)
})

// The backup lists every file of the blob store after copying the database: an --out inside it (directly or
// through a symlink) made it copy its own partial archive into itself while it grew (8 GB a minute, until
// the disk was full). Found by the ops attack. Bounded here: without the refusal the process is stopped.
test('backup --out inside the data dir blob store is refused (exit 2) before anything is written', async () => {
  ensureBinary()
  const base = tempDir('fixloop-backup-self-')
  const dir = join(base, 'data')
  expect((await runBinary(['org', 'create', '--name', 'A', '--data-dir', dir])).code).toBe(0)
  mkdirSync(join(dir, 'blobs', 'ab'), { recursive: true, mode: 0o700 })
  writeFileSync(join(dir, 'blobs', 'ab', 'object'), 'stored upload', { mode: 0o600 })
  symlinkSync(join(dir, 'blobs', 'ab'), join(base, 'link'))
  for (const out of [join(dir, 'blobs', 'self.tar'), join(base, 'link', 'self.tar')]) {
    const proc = Bun.spawn([BINARY, 'backup', '--out', out, '--data-dir', dir], { env: { PATH: process.env.PATH ?? '' }, stdout: 'pipe', stderr: 'pipe' })
    const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000)
    const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited])
    clearTimeout(timer)
    for (const name of readdirSync(join(dir, 'blobs', 'ab'))) if (name !== 'object') rmSync(join(dir, 'blobs', 'ab', name), { force: true })
    for (const name of readdirSync(join(dir, 'blobs'))) if (name !== 'ab') rmSync(join(dir, 'blobs', name), { recursive: true, force: true })
    expect(code).toBe(2)
    expect(stderr).toContain("inside the data dir's blob store")
  }
  expect(readdirSync(join(dir, 'blobs', 'ab'))).toEqual(['object'])
  rmSync(base, { recursive: true, force: true })
}, 60_000)

test('restore --force from an archive inside the data dir it replaces is refused (exit 2), and the archive stays', async () => {
  ensureBinary()
  const base = tempDir('fixloop-restore-self-')
  const dir = join(base, 'data')
  expect((await runBinary(['org', 'create', '--name', 'A', '--data-dir', dir])).code).toBe(0)
  const outside = join(base, 'b.tar')
  expect((await runBinary(['backup', '--out', outside, '--data-dir', dir])).code).toBe(0)
  // An operator keeps the archive in the data dir's blob folder, then restores it over that dir.
  mkdirSync(join(dir, 'blobs'), { recursive: true, mode: 0o700 })
  const inside = join(dir, 'blobs', 'b.tar')
  writeFileSync(inside, readFileSync(outside), { mode: 0o600 })
  const r = await runBinary(['restore', '--from', inside, '--data-dir', dir, '--force'])
  expect(r.code).toBe(2)
  expect(r.stderr).toContain('is inside the data dir')
  expect(existsSync(inside)).toBe(true)
  // From outside it restores as before.
  expect((await runBinary(['restore', '--from', outside, '--data-dir', dir, '--force'])).code).toBe(0)
  rmSync(base, { recursive: true, force: true })
}, 60_000)
