/** `fixloop migrate` through the compiled binary (backup and restore: test/backup-restore.test.ts). */
import { expect, test } from 'bun:test'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { runBinary, tempDir } from './harness'
import { ensureBinary } from './helpers-lifecycle'
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
  expect(JSON.parse(first.stdout).database).toBe(`SQLite ${join(dataDir, 'fixloop.db')}`)
  const second = await runBinary(['migrate', '--data-dir', dataDir, '--json'])
  expect(JSON.parse(second.stdout).applied).toEqual([])
})
