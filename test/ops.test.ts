/** `fixloop migrate` and `fixloop backup` through the compiled binary, and a restore from the backup. */
import { expect, test } from 'bun:test'
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { call, runBinary, spawnServer, tempDir } from './harness'
import { cliTenant, ensureBinary } from './helpers-lifecycle'
import { MIGRATIONS } from '../src/db/migrations'

test('every migrations/*.sql file is embedded, in order', () => {
  const files = readdirSync(join(import.meta.dir, '..', 'migrations')).filter((f) => f.endsWith('.sql')).sort()
  expect(MIGRATIONS.map((m) => `${m.name}.sql`)).toEqual(files)
})

test('migrate applies the embedded migrations once; a second run applies none', async () => {
  ensureBinary()
  const dataDir = tempDir()
  const first = await runBinary(['migrate', '--data-dir', dataDir, '--json'])
  expect(first.code).toBe(0)
  expect(JSON.parse(first.stdout).applied).toEqual(MIGRATIONS.map((m) => m.name))
  const second = await runBinary(['migrate', '--data-dir', dataDir, '--json'])
  expect(JSON.parse(second.stdout).applied).toEqual([])
})

test('backup while the server runs, then restore into a new data dir', async () => {
  ensureBinary()
  const dataDir = tempDir()
  const t = await cliTenant(dataDir)
  const server = await spawnServer(dataDir)
  const ids: string[] = []
  try {
    for (let i = 0; i < 5; i++) ids.push((await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: `Backup case ${i}: the map is empty` } })).body.id)
    const out = join(tempDir(), 'backup.db')
    const r = await runBinary(['backup', '--out', out, '--data-dir', dataDir, '--json'])
    expect(r.code).toBe(0)
    expect(JSON.parse(r.stdout)).toEqual({ backup: out })
    // An existing file is never overwritten.
    const again = await runBinary(['backup', '--out', out, '--data-dir', dataDir])
    expect(again.code).not.toBe(0)
    expect(again.stderr).toContain('already exists')

    const restored = tempDir()
    mkdirSync(restored, { recursive: true })
    copyFileSync(out, join(restored, 'fixloop.db'))
    copyFileSync(join(dataDir, 'master.key'), join(restored, 'master.key'))
    const second = await spawnServer(restored)
    try {
      expect((await call(second.url, 'GET', '/readyz')).status).toBe(200)
      for (const id of ids) expect((await call(second.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })).status).toBe(200)
      // The signing secret survived too: a token minted on the restored server works.
      const token = await call(second.url, 'POST', `/v1/tokens/mint?appId=${t.appId}`, { auth: t.key, body: { sub: 'u1' } })
      expect(token.status).toBe(200)
      const sub = await call(second.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'after restore' }, headers: { 'x-service-user-token': token.body.token } })
      expect(sub.status).toBe(201)
    } finally {
      await second.stop()
    }
  } finally {
    await server.stop()
  }
}, 60_000)
