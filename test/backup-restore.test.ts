/**
 * Backup and restore through the compiled binary: one archive with the database, the uploaded blobs and a
 * manifest; restore checks it and refuses what it must; a restored server serves the same downloads.
 */
import { describe, expect, test, beforeAll, afterAll } from 'bun:test'
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { call, runBinary, spawnServer, tempDir } from './harness'
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
    // A plain tar that any tool can list; the manifest comes last.
    const listing = Bun.spawnSync(['tar', 'tf', out]).stdout.toString().trim().split('\n')
    expect(listing[0]).toBe('fixloop.db')
    expect(listing.at(-1)).toBe('manifest.json')
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
    const rr = await runBinary(['restore', '--from', out, '--data-dir', restored])
    expect(rr.code).toBe(0)
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
    const r = await runBinary(['restore', '--from', out, '--data-dir', target])
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
