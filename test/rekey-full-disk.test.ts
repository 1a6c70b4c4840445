/**
 * `fixloop rekey` on a data dir whose file system runs out of inodes at each step in turn (a tmpfs with
 * nr_inodes, filled to leave 0, 1, 2 … free): whatever step fails, the instance is left whole, either
 * still under the old key with master.key holding it, or re-keyed with master.key holding the new key,
 * never a database sealed under the new key beside a master.key with the old one (which the next start
 * refuses). A failure exits 2 with a message, never 1 with a stack. Against the compiled binary.
 */
import { afterAll, expect, test } from 'bun:test'
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { runBinary, tempDir } from './harness'
import { cliTenant, ensureBinary } from './helpers-lifecycle'
import { mountTmpfs, unmountTmpfs } from './tmpfs'

afterAll(() => unmountTmpfs())

test('rekey meeting a file system without free inodes at any step leaves the old key or the new one, never a mix', async () => {
  ensureBinary()
  const source = join(tempDir(), 'data')
  const t = await cliTenant(source)
  expect((await runBinary(['webhook', 'create', '--org', t.orgId, '--url', 'https://hooks.example.com/x', '--data-dir', source])).code).toBe(0)
  const oldKey = readFileSync(join(source, 'master.key'), 'utf8').trim()
  const keys = tempDir()
  const newKeyFile = join(keys, 'new.key')
  writeFileSync(newKeyFile, Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('hex') + '\n', { mode: 0o600 })
  const newKey = readFileSync(newKeyFile, 'utf8').trim()

  const outcomes = new Set<string>()
  for (let free = 0; free <= 6; free++) {
    const dir = mountTmpfs('the rekey check', 'size=16m,nr_inodes=64')
    if (!dir) return
    const data = join(dir, 'data')
    cpSync(source, data, { recursive: true })
    const eat = join(dir, 'eat')
    mkdirSync(eat)
    const made: string[] = []
    for (let i = 0; i < 100; i++) {
      try {
        writeFileSync(join(eat, String(i)), '')
        made.push(join(eat, String(i)))
      } catch {
        break
      }
    }
    // Give back `free` inodes.
    for (const f of made.slice(made.length - free)) rmSync(f)
    const r = await runBinary(['rekey', '--old-key-file', join(data, 'master.key'), '--new-key-file', newKeyFile, '--data-dir', data])
    rmSync(eat, { recursive: true, force: true })
    expect(r.stderr).not.toMatch(/\n\s+at /)
    expect([0, 2]).toContain(r.code)
    const keyFile = readFileSync(join(data, 'master.key'), 'utf8').trim()
    expect(keyFile).toBe(r.code === 0 ? newKey : oldKey)
    // The instance opens with its own master.key (a wrong key is exit 2 "not the key …")…
    const opened = await runBinary(['webhook', 'list', '--org', t.orgId, '--data-dir', data])
    expect(opened.stderr).toBe('')
    expect(opened.code).toBe(0)
    // …and not with the other one: the database's key check value is the key master.key holds.
    const withOther = await runBinary(['webhook', 'list', '--org', t.orgId, '--data-dir', data], { FIXLOOP_MASTER_KEY: r.code === 0 ? oldKey : newKey })
    expect(withOther.code).toBe(2)
    outcomes.add(r.code === 0 ? 're-keyed' : r.stderr.includes('nothing was re-keyed') || r.stderr.includes('cannot use') ? 'refused' : r.stderr)
    unmountTmpfs(dir)
  }
  // Both kinds of outcome were met (a refusal at some step, success once there was room).
  expect([...outcomes].sort()).toEqual(['re-keyed', 'refused'])
}, 120_000)

test('a rekey stopped between its commit and the rename of master.key.new is finished by the next command', async () => {
  ensureBinary()
  const data = join(tempDir(), 'data')
  const t = await cliTenant(data)
  expect((await runBinary(['webhook', 'create', '--org', t.orgId, '--url', 'https://hooks.example.com/x', '--data-dir', data])).code).toBe(0)
  const keyFile = join(data, 'master.key')
  const oldKey = readFileSync(keyFile, 'utf8')
  const newKeyFile = join(tempDir(), 'new.key')
  expect((await runBinary(['rekey', '--old-key-file', keyFile, '--new-key-file', newKeyFile, '--data-dir', data])).code).toBe(0)
  const newKey = readFileSync(keyFile, 'utf8')
  expect(newKey).not.toBe(oldKey)
  // The state a kill between the commit and the rename leaves: the old key in master.key, the new one staged.
  writeFileSync(`${keyFile}.new`, newKey, { mode: 0o600 })
  writeFileSync(keyFile, oldKey, { mode: 0o600 })

  const opened = await runBinary(['webhook', 'list', '--org', t.orgId, '--data-dir', data])
  expect(opened.code).toBe(0)
  expect(opened.stderr).toContain('a re-key was interrupted after its commit')
  expect(readFileSync(keyFile, 'utf8')).toBe(newKey)
  expect(existsSync(`${keyFile}.new`)).toBe(false)
  // Once finished, nothing more is said.
  const again = await runBinary(['webhook', 'list', '--org', t.orgId, '--data-dir', data])
  expect(again.code).toBe(0)
  expect(again.stderr).toBe('')

  // A staged key that is not the database's (a rekey that never committed) changes nothing: master.key is refused as before.
  writeFileSync(`${keyFile}.new`, Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('hex') + '\n', { mode: 0o600 })
  writeFileSync(keyFile, oldKey, { mode: 0o600 })
  const refused = await runBinary(['webhook', 'list', '--org', t.orgId, '--data-dir', data])
  expect(refused.code).toBe(2)
  expect(refused.stderr).toContain('is not the key this database')
  expect(readFileSync(keyFile, 'utf8')).toBe(oldKey)

  // With FIXLOOP_MASTER_KEY holding the old key, the staged file is pointed to, not renamed.
  writeFileSync(`${keyFile}.new`, newKey, { mode: 0o600 })
  const env = await runBinary(['webhook', 'list', '--org', t.orgId, '--data-dir', data], { FIXLOOP_MASTER_KEY: oldKey.trim() })
  expect(env.code).toBe(2)
  expect(env.stderr).toContain(`${keyFile}.new holds the new key`)
  expect(existsSync(`${keyFile}.new`)).toBe(true)
}, 60_000)
