/**
 * `rekey` while the admin CLI runs on the same data dir (it takes no lock): a command that opens the data
 * dir after the re-key's commit but before its rename of master.key.new sees the staged key open the
 * database and finishes the rename itself (master-key-check.ts). rekey then met ENOENT on its own rename and
 * reported "the database is re-keyed, but master.key still holds the OLD key", exit 2, naming a
 * master.key.new that was gone, while master.key already held the new key. Found by the ops attack (a
 * rekey of ~300,000 sealed values beside a loop of `app create`).
 */
import { afterAll, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { cpSync, existsSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { BINARY, runBinary, tempDir } from './harness'
import { ensureBinary } from './helpers-lifecycle'

const dirs: string[] = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

test('a CLI command that finishes an in-flight rekey rename does not make rekey report the old key', async () => {
  ensureBinary()
  const base = tempDir('fixloop-rekey-race-')
  dirs.push(base)
  const dir = join(base, 'data')
  const org = JSON.parse((await runBinary(['org', 'create', '--name', 'A', '--json', '--data-dir', dir])).stdout).id as string
  expect((await runBinary(['webhook', 'create', '--org', org, '--url', 'https://example.com/h', '--data-dir', dir])).code).toBe(0)
  // Many sealed values (copies of the one webhook's), so the re-key's transaction lasts long enough to race.
  const db = new Database(join(dir, 'fixloop.db'))
  const cols = (db.query('PRAGMA table_info(webhooks)').all() as { name: string }[]).map((c) => `"${c.name}"`)
  const pick = cols.map((c) => (c === '"id"' ? 'lower(hex(randomblob(12)))' : c)).join(',')
  db.exec('BEGIN')
  for (let i = 0; i < 150; i++) db.exec(`INSERT INTO webhooks (${cols.join(',')}) SELECT ${pick} FROM webhooks LIMIT 1000`)
  db.exec('COMMIT')
  db.close()
  const oldKey = join(base, 'old.key')
  cpSync(join(dir, 'master.key'), oldKey)
  const newKey = join(base, 'new.key')

  const rekey = Bun.spawn([BINARY, 'rekey', '--old-key-file', oldKey, '--new-key-file', newKey, '--data-dir', dir], { env: { PATH: process.env.PATH ?? '' }, stdout: 'pipe', stderr: 'pipe' })
  const timer = setTimeout(() => rekey.kill('SIGKILL'), 50_000)
  const done = Promise.all([new Response(rekey.stderr).text(), rekey.exited])
  let finished = false
  void rekey.exited.then(() => (finished = true))
  // Admin commands one after another while it runs (at most 60): each opens the data dir.
  for (let i = 0; i < 60 && !finished; i++) await runBinary(['org', 'list', '--data-dir', dir])
  const [stderr, code] = await done
  clearTimeout(timer)
  expect(stderr).not.toContain('still holds the OLD key')
  expect(code).toBe(0)
  expect(readFileSync(join(dir, 'master.key'), 'utf8')).toBe(readFileSync(newKey, 'utf8'))
  expect(existsSync(join(dir, 'master.key.new'))).toBe(false)
}, 90_000)
