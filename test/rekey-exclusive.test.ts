/**
 * What a refused rekey leaves behind: it left the --new-key-file it had created (ops attack).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { cpSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { runBinary, tempDir } from './harness'
import { ensureBinary } from './helpers-lifecycle'
import { lockDataDir } from '../src/db/data-dir-lock'

const dirs: string[] = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})
beforeAll(() => ensureBinary())

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
