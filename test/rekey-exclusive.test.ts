/**
 * `rekey` against the commands that read the master key meanwhile (key-lock.ts), and what a refused rekey
 * leaves behind. Left open by the ops attack:
 * - a backup taken during a rekey could be signed with the old key over a database copy sealed with the
 *   new one (or carry the new key beside the old database): restore refused the archive that had claimed
 *   success;
 * - an admin command that checked the key just before the re-key's transaction sealed its new secret under
 *   the old key after the commit (one value no key opens);
 * - a refused rekey left the --new-key-file it had created.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { BINARY, runBinary, tempDir } from './harness'
import { ensureBinary } from './helpers-lifecycle'
import { lockDataDir } from '../src/db/data-dir-lock'
import { openPool } from '../src/db/pg/client-options'
import { pgMissingReason, startPostgres } from './pg-server'

const dirs: string[] = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})
beforeAll(() => ensureBinary())

function spawn(args: string[], env: Record<string, string> = {}) {
  const proc = Bun.spawn([BINARY, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdout: 'pipe', stderr: 'pipe' })
  const timer = setTimeout(() => proc.kill('SIGKILL'), 60_000)
  return Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]).then(([stdout, stderr, code]) => {
    clearTimeout(timer)
    return { code, stdout, stderr }
  })
}

/** A data dir with one Org and `copies` sealed webhook secrets (copies of one), and its key in old.key. */
async function instance(copies: number): Promise<{ base: string; dir: string; org: string; key: string }> {
  const base = tempDir('fixloop-rekey-excl-')
  dirs.push(base)
  const dir = join(base, 'data')
  const org = JSON.parse((await runBinary(['org', 'create', '--name', 'A', '--json', '--data-dir', dir])).stdout).id as string
  expect((await runBinary(['webhook', 'create', '--org', org, '--url', 'https://example.com/h', '--data-dir', dir])).code).toBe(0)
  if (copies > 0) {
    const db = new Database(join(dir, 'fixloop.db'))
    const cols = (db.query('PRAGMA table_info(webhooks)').all() as { name: string }[]).map((c) => `"${c.name}"`)
    const pick = cols.map((c) => (c === '"id"' ? 'lower(hex(randomblob(12)))' : c)).join(',')
    db.exec('BEGIN')
    for (let i = 0; i < copies / 1000; i++) db.exec(`INSERT INTO webhooks (${cols.join(',')}) SELECT ${pick} FROM webhooks LIMIT 1000`)
    db.exec('COMMIT')
    db.close()
  }
  const key = join(base, 'old.key')
  cpSync(join(dir, 'master.key'), key)
  return { base, dir, org, key }
}

/** Every sealed value of `dir` opens with `key`: a rekey from it re-seals them all (one that does not open is refused). */
async function allSealedUnder(dir: string, key: string, next: string): Promise<void> {
  const r = await runBinary(['rekey', '--old-key-file', key, '--new-key-file', next, '--data-dir', dir])
  expect(r.stderr).not.toContain('does not open')
  expect(r.code).toBe(0)
}

test('a backup raced against rekey is restorable or fails loudly, never a success restore refuses', async () => {
  const { base, dir, key } = await instance(20_000)
  // Enough blobs that the backup lasts about as long as the re-key does.
  addBlobs(dir, 1500)
  let current = key
  const archives: string[] = []
  const started = Date.now()
  for (let i = 0; i < 8 && Date.now() - started < 60_000; i++) {
    const out = join(base, `b${i}.tar`)
    const next = join(base, `k${i}.key`)
    const backup = spawn(['backup', '--out', out, '--include-master-key', '--data-dir', dir])
    await Bun.sleep((i * 70) % 400)
    const rekey = spawn(['rekey', '--old-key-file', current, '--new-key-file', next, '--data-dir', dir])
    const [b, r] = await Promise.all([backup, rekey])
    // Either may be refused while the other holds the key, loudly (exit 2 and a sentence), never a crash.
    for (const x of [b, r]) if (x.code !== 0) expect({ code: x.code, stderr: x.stderr }).toMatchObject({ code: 2, stderr: expect.stringMatching(/^fixloop: /m) })
    if (r.code === 0) current = next
    if (b.code === 0) archives.push(out)
    else expect(existsSync(out)).toBe(false)
  }
  expect(archives.length).toBeGreaterThan(0)
  for (const [i, archive] of archives.entries()) {
    const target = join(base, `restored${i}`)
    const restored = await runBinary(['restore', '--from', archive, '--data-dir', target])
    expect({ archive, code: restored.code, stderr: restored.stderr }).toMatchObject({ archive, code: 0 })
    // The archive's key opens the restored database and every secret in it.
    const restoredKey = join(base, `restored${i}.key`)
    cpSync(join(target, 'master.key'), restoredKey)
    await allSealedUnder(target, restoredKey, join(base, `restored${i}.next`))
  }
}, 180_000)

/** `count` random 2 KB blobs in the embedded store: a backup then lasts a while. */
function addBlobs(dir: string, count: number): void {
  for (let i = 0; i < count; i++) {
    const sub = join(dir, 'blobs', 'app', String(i % 20))
    mkdirSync(sub, { recursive: true })
    writeFileSync(join(sub, `b${i}`), randomBytes(2048))
  }
}

test('a master.key replaced while a backup copies the blobs does not go into the archive beside the old database', async () => {
  const { base, dir, key } = await instance(0)
  addBlobs(dir, 4000)
  const original = readFileSync(key, 'utf8')
  let raced = 0
  for (let i = 0; i < 6 && raced === 0; i++) {
    const out = join(base, `swap${i}.tar`)
    const proc = Bun.spawn([BINARY, 'backup', '--out', out, '--include-master-key', '--data-dir', dir], { env: { PATH: process.env.PATH ?? '' }, stdout: 'pipe', stderr: 'pipe' })
    await Bun.sleep(250 + i * 100)
    // As a restore --force or an operator's copy does: another key renamed over master.key, then put back.
    const other = join(base, 'other.key')
    writeFileSync(other, randomBytes(32).toString('hex') + '\n', { mode: 0o600 })
    const during = proc.exitCode === null
    renameSync(other, join(dir, 'master.key'))
    const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited])
    writeFileSync(join(dir, 'master.key'), original, { mode: 0o600 })
    if (code !== 0) {
      expect({ code, stderr }).toMatchObject({ code: 2 })
      continue
    }
    if (during) raced++
    const target = join(base, `swapped${i}`)
    const restored = await runBinary(['restore', '--from', out, '--data-dir', target])
    expect({ code: restored.code, stderr: restored.stderr }).toMatchObject({ code: 0 })
    expect(readFileSync(join(target, 'master.key'), 'utf8')).toBe(original)
  }
  expect(raced).toBeGreaterThan(0)
}, 120_000)

test('an admin command that read the key before a rekey seals nothing under the old key', async () => {
  const { base, dir, org, key } = await instance(0)
  let current = key
  for (let i = 0; i < 4; i++) {
    // The test holds the database's write lock: the command reads (and checks) the key, then waits to
    // write its sealed secret; the rekey starts while it waits, and the lock goes.
    const db = new Database(join(dir, 'fixloop.db'))
    db.exec('BEGIN IMMEDIATE')
    const create = spawn(['webhook', 'create', '--org', org, '--url', `https://example.com/w${i}`, '--data-dir', dir])
    await Bun.sleep(1200)
    const next = join(base, `k${i}.key`)
    const rekey = spawn(['rekey', '--old-key-file', current, '--new-key-file', next, '--data-dir', dir])
    await Bun.sleep(600)
    db.exec('COMMIT')
    db.close()
    const [c, r] = await Promise.all([create, rekey])
    expect({ code: c.code, stderr: c.stderr }).toMatchObject({ code: 0 })
    expect({ code: r.code, stderr: r.stderr }).toMatchObject({ code: 0 })
    current = next
    // The new webhook's secret is sealed under the key the database now holds.
    const probe = join(base, `probe${i}.key`)
    await allSealedUnder(dir, current, probe)
    current = probe
  }
}, 120_000)

describe.skipIf(Boolean(pgMissingReason()))('on PostgreSQL', () => {
  test('an admin command that checked FIXLOOP_MASTER_KEY before a rekey seals nothing under the old key', async () => {
    const server = await startPostgres()
    const base = tempDir('fixloop-rekey-excl-pg-')
    dirs.push(base)
    try {
      const url = await server.createDatabase('rekey_excl')
      const dataDir = join(base, 'never-created')
      const keyFile = (name: string, hex: string) => {
        writeFileSync(join(base, name), hex + '\n', { mode: 0o600 })
        return join(base, name)
      }
      let current = randomBytes(32).toString('hex')
      const org = JSON.parse((await runBinary(['org', 'create', '--name', 'A', '--json', '--data-dir', dataDir], { FIXLOOP_DATABASE_URL: url, FIXLOOP_MASTER_KEY: current })).stdout).id as string
      for (let i = 0; i < 3; i++) {
        const env = { FIXLOOP_DATABASE_URL: url, FIXLOOP_MASTER_KEY: current }
        // The test holds the webhooks table: the command checks the key, then waits to write its sealed
        // secret; the rekey starts while it waits, and the table is let go.
        const pool = openPool(url, 1)
        const hold = await pool.connect()
        await hold.query('BEGIN')
        await hold.query('LOCK TABLE webhooks IN ACCESS EXCLUSIVE MODE')
        const create = spawn(['webhook', 'create', '--org', org, '--url', `https://example.com/w${i}`, '--data-dir', dataDir], env)
        await Bun.sleep(1500)
        const next = randomBytes(32).toString('hex')
        const rekey = spawn(['rekey', '--old-key-file', keyFile(`o${i}.key`, current), '--new-key-file', keyFile(`n${i}.key`, next), '--data-dir', dataDir], env)
        await Bun.sleep(600)
        await hold.query('COMMIT')
        hold.release()
        await pool.end()
        const [c, r] = await Promise.all([create, rekey])
        expect({ code: c.code, stderr: c.stderr }).toMatchObject({ code: 0 })
        expect({ code: r.code, stderr: r.stderr }).toMatchObject({ code: 0 })
        // Every sealed value opens with the new key: a rekey from it re-seals them all.
        const probe = randomBytes(32).toString('hex')
        const check = await runBinary(['rekey', '--old-key-file', keyFile(`c${i}.key`, next), '--new-key-file', keyFile(`p${i}.key`, probe), '--data-dir', dataDir], { ...env, FIXLOOP_MASTER_KEY: next })
        expect(check.stderr).not.toContain('does not open')
        expect(check.code).toBe(0)
        current = probe
      }
    } finally {
      await server.stop()
    }
  }, 120_000)
})

test('a refused rekey removes the --new-key-file it created, never one the operator gave', async () => {
  const { base, dir, key } = await instance(0)
  // Refused because a server holds the data dir (its lock, taken here as serve takes it).
  const lock = lockDataDir(dir, 'the test')
  try {
    const made = join(base, 'made.key')
    const r = await runBinary(['rekey', '--old-key-file', key, '--new-key-file', made, '--data-dir', dir])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('in use by another fixloop server')
    expect(existsSync(made)).toBe(false)
    const given = join(base, 'given.key')
    writeFileSync(given, randomBytes(32).toString('hex') + '\n', { mode: 0o600 })
    const before = readFileSync(given, 'utf8')
    expect((await runBinary(['rekey', '--old-key-file', key, '--new-key-file', given, '--data-dir', dir])).code).toBe(2)
    expect(readFileSync(given, 'utf8')).toBe(before)
  } finally {
    lock.release()
  }
  // Refused because --old-key-file is not the database's key (found after the new file was made).
  const wrong = join(base, 'wrong.key')
  writeFileSync(wrong, randomBytes(32).toString('hex') + '\n', { mode: 0o600 })
  const made = join(base, 'made2.key')
  const r = await runBinary(['rekey', '--old-key-file', wrong, '--new-key-file', made, '--data-dir', dir])
  expect(r.code).toBe(2)
  expect(r.stderr).toContain('not the key this database was sealed with')
  expect(existsSync(made)).toBe(false)
  expect(existsSync(join(dir, 'master.key.new'))).toBe(false)
  // A rekey that succeeds keeps the file it made (the database is sealed under it).
  const kept = join(base, 'kept.key')
  expect((await runBinary(['rekey', '--old-key-file', key, '--new-key-file', kept, '--data-dir', dir])).code).toBe(0)
  expect(readFileSync(join(dir, 'master.key'), 'utf8')).toBe(readFileSync(kept, 'utf8'))
}, 60_000)

test('restore --force waits for an admin command that holds the key before replacing key and database', async () => {
  // Left open by the ops work: restore replaced master.key and fixloop.db under a command that had read the
  // old key (it then sealed its value with a key the restored instance does not have).
  const { base, dir } = await instance(0)
  const archive = join(base, 'b.tar')
  expect((await runBinary(['backup', '--out', archive, '--include-master-key', '--data-dir', dir])).code).toBe(0)
  // What an admin command holds from before it reads the key until it exits (src/db/key-lock.ts).
  const held = new Database(join(dir, 'rekey.lock'))
  held.run('BEGIN')
  held.query('SELECT count(*) FROM sqlite_master').get()
  const restore = spawn(['restore', '--from', archive, '--force', '--data-dir', dir]).then((r) => ({ ...r, at: Date.now() }))
  await Bun.sleep(1500)
  const releasedAt = Date.now()
  held.run('ROLLBACK')
  held.close()
  const r = await restore
  expect({ code: r.code, stderr: r.stderr }).toMatchObject({ code: 0 })
  // It finished only after the command let go of the key.
  expect(r.at).toBeGreaterThanOrEqual(releasedAt)
})

test('restore --force refuses, changing nothing, while an admin command keeps the key past the wait', async () => {
  const { base, dir } = await instance(0)
  const archive = join(base, 'b.tar')
  expect((await runBinary(['backup', '--out', archive, '--include-master-key', '--data-dir', dir])).code).toBe(0)
  const keyBefore = readFileSync(join(dir, 'master.key'))
  const dbBefore = readFileSync(join(dir, 'fixloop.db'))
  const held = new Database(join(dir, 'rekey.lock'))
  held.run('BEGIN')
  held.query('SELECT count(*) FROM sqlite_master').get()
  try {
    const r = await spawn(['restore', '--from', archive, '--force', '--data-dir', dir])
    expect(r.code).toBe(2)
    expect(r.stderr).toMatch(/^fixloop: .*using the master key.*nothing was restored; run restore again/m)
  } finally {
    held.run('ROLLBACK')
    held.close()
  }
  expect(readFileSync(join(dir, 'master.key')).equals(keyBefore)).toBe(true)
  expect(readFileSync(join(dir, 'fixloop.db')).equals(dbBefore)).toBe(true)
})

// packaging/fixloop.service documents running the CLI as root on the service user's data dir. Needs root
// (and setpriv) to act as the service user, nobody here.
const NOBODY = 65534
const canSwitch = process.getuid?.() === 0 && Bun.spawnSync(['which', 'setpriv']).exitCode === 0
describe.skipIf(!canSwitch)("root's command on a service user's data dir", () => {
  test("leaves rekey.lock to the dir's owner: the owner's admin commands and backups still run after it", async () => {
    const { base, dir } = await instance(0)
    chmodSync(base, 0o755)
    // As an upgraded instance is: the service user's dir, no rekey.lock yet (serve makes none).
    rmSync(join(dir, 'rekey.lock'), { force: true })
    Bun.spawnSync(['chown', '-R', `${NOBODY}:${NOBODY}`, dir])
    const asNobody = (args: string[]) => {
      const p = Bun.spawnSync(['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', BINARY, ...args], { env: { PATH: process.env.PATH ?? '' } })
      return { code: p.exitCode, stderr: p.stderr.toString() }
    }
    // Root first (the operator's one-off command), then the service user (a backup timer, an admin command).
    expect((await runBinary(['org', 'list', '--data-dir', dir])).code).toBe(0)
    expect(statSync(join(dir, 'rekey.lock')).uid).toBe(NOBODY)
    // Before: exit 2, "cannot use the database …/fixloop.db: SQLite could not open or write it" (root's 0600 rekey.lock).
    expect(asNobody(['org', 'list', '--data-dir', dir])).toEqual({ code: 0, stderr: '' })
    const out = join(base, 'backups')
    mkdirSync(out)
    Bun.spawnSync(['chown', `${NOBODY}:${NOBODY}`, out])
    expect(asNobody(['backup', '--out', join(out, 'b.tar'), '--data-dir', dir])).toMatchObject({ code: 0 })
    // A lock file the user cannot open (root's, as one made before this fix is) is named, not fixloop.db.
    Bun.spawnSync(['chown', '0:0', join(dir, 'rekey.lock')])
    const refused = asNobody(['org', 'list', '--data-dir', dir])
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain(`fixloop's user may not read and write ${join(dir, 'rekey.lock')}`)
  })
})
