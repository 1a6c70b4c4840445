/**
 * FIXLOOP_PASSWORD_HASH_MIB: the memory argon2id uses for new dashboard password hashes. The default stays
 * 64 MiB, the setting applies to hashes made from then on (the CLI's and the server's alike), a password
 * hashed under another setting still signs in (its hash carries its own parameters), and a value below
 * OWASP's floor or not a whole number stops every command (exit 2). The other test files run at 19 MiB
 * (test/harness.ts TEST_PASSWORD_ENV): this one names its setting each time.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, runBinary, startTestServer, tempDir, type TestServer } from './harness'
import { loadConfig } from '../src/config'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const memoryOf = (hash: string | undefined) => Number(/\$m=(\d+),t=(\d+),p=(\d+)\$/.exec(hash ?? '')?.[1])
const passesOf = (hash: string | undefined) => Number(/\$m=(\d+),t=(\d+),p=(\d+)\$/.exec(hash ?? '')?.[2])

describe('the setting', () => {
  test('defaults to 64 MiB and takes a whole number from 19 to 1024', () => {
    const dataDir = tempDir()
    expect(loadConfig({ dataDir }, {}).passwordHashMib).toBe(64)
    expect(loadConfig({ dataDir }, { FIXLOOP_PASSWORD_HASH_MIB: '19' }).passwordHashMib).toBe(19)
    expect(loadConfig({ dataDir }, { FIXLOOP_PASSWORD_HASH_MIB: '1024' }).passwordHashMib).toBe(1024)
    for (const bad of ['18', '0', '1025', '32.5', 'lots', '-64']) {
      expect(() => loadConfig({ dataDir }, { FIXLOOP_PASSWORD_HASH_MIB: bad })).toThrow(`FIXLOOP_PASSWORD_HASH_MIB: must be a whole number from 19 to 1024, got "${bad}"`)
    }
  })

  test('a value below the floor stops a command with exit 2, nothing created', async () => {
    const dataDir = join(tempDir(), 'data')
    const passwordFile = join(tempDir(), 'pw')
    writeFileSync(passwordFile, 'a long password\n')
    const r = await runBinary(['admin', 'create', '--email', 'a@example.com', '--password-file', passwordFile, '--data-dir', dataDir], { FIXLOOP_PASSWORD_HASH_MIB: '8' })
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('FIXLOOP_PASSWORD_HASH_MIB: must be a whole number from 19 to 1024, got "8"')
    expect(existsSync(dataDir)).toBe(false)
  })
})

describe('hashes', () => {
  let lean: TestServer
  let standard: TestServer

  beforeAll(async () => {
    ;[lean, standard] = await Promise.all([startTestServer({ FIXLOOP_PASSWORD_HASH_MIB: '19' }), startTestServer({ FIXLOOP_PASSWORD_HASH_MIB: '64' })])
  })
  afterAll(async () => {
    await Promise.all([lean?.close(), standard?.close()])
  })

  test('new passwords are hashed with the setting: argon2id, 2 passes over its memory', async () => {
    await lean.services.admins.create('lean@example.com', 'lean password 1')
    await standard.services.admins.create('standard@example.com', 'standard password 1')
    const leanHash = (await lean.ctx.store.admins.byEmail('lean@example.com'))?.passwordHash
    const standardHash = (await standard.ctx.store.admins.byEmail('standard@example.com'))?.passwordHash
    expect(leanHash).toStartWith('$argon2id$')
    expect([memoryOf(leanHash), passesOf(leanHash)]).toEqual([19 * 1024, 2])
    expect([memoryOf(standardHash), passesOf(standardHash)]).toEqual([64 * 1024, 2])
    // A reset hashes with the setting too.
    await lean.services.admins.resetPassword('lean@example.com', 'lean password 2')
    expect(memoryOf((await lean.ctx.store.admins.byEmail('lean@example.com'))?.passwordHash)).toBe(19 * 1024)
  })

  test('the CLI hashes with the setting', async () => {
    const dataDir = join(tempDir(), 'data')
    const passwordFile = join(tempDir(), 'pw')
    writeFileSync(passwordFile, 'a long password\n')
    const r = await runBinary(['admin', 'create', '--email', 'cli@example.com', '--password-file', passwordFile, '--data-dir', dataDir], { FIXLOOP_PASSWORD_HASH_MIB: '24' })
    expect(r.code).toBe(0)
    const { Database } = await import('bun:sqlite')
    const db = new Database(join(dataDir, 'fixloop.db'), { readonly: true })
    try {
      const row = db.query('SELECT password_hash AS hash FROM admins WHERE email = ?').get('cli@example.com') as { hash: string } | null
      expect(memoryOf(row?.hash)).toBe(24 * 1024)
    } finally {
      db.close()
    }
  })

  test('a password hashed under another setting still signs in, and a wrong one is still refused', async () => {
    // Hashed at 64 MiB, checked by a server set to 19: the stored hash says how to check it.
    await standard.services.admins.create('moved@example.com', 'moved password 1')
    const row = (await standard.ctx.store.admins.byEmail('moved@example.com'))!
    expect(memoryOf(row.passwordHash)).toBe(64 * 1024)
    expect(await lean.ctx.store.admins.insertAdmin(row, [])).toBe(true)
    const ok = await call(lean.url, 'POST', '/admin/api/session', { body: { email: 'moved@example.com', password: 'moved password 1' } })
    expect(ok.status).toBe(200)
    const wrong = await call(lean.url, 'POST', '/admin/api/session', { body: { email: 'moved@example.com', password: 'moved password 2' } })
    expect(wrong.status).toBe(401)
    expect(wrong.body.error.code).toBe('invalid_credentials')
    // An unknown email answers the same, after a check of the same kind (no user enumeration).
    const unknown = await call(lean.url, 'POST', '/admin/api/session', { body: { email: 'nobody@example.com', password: 'moved password 1' } })
    expect(unknown.status).toBe(401)
    expect(unknown.body.error.code).toBe('invalid_credentials')
  })
})
