/**
 * A flag that takes one value, given twice, is refused (exit 2, naming the flag): node's parser kept the
 * last one silently, so `fixloop backup --out a --out b` wrote b, and `--data-dir` twice ran on the second
 * dir. Left open by the ops attack. Repeatable flags (`admin create --org`) and repeated switches are fine.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { runBinary, tempDir } from './harness'
import { ensureBinary } from './helpers-lifecycle'

let base: string
let dir: string
beforeAll(async () => {
  ensureBinary()
  base = tempDir('fixloop-repeat-')
  dir = join(base, 'data')
  expect((await runBinary(['org', 'create', '--name', 'A', '--data-dir', dir])).code).toBe(0)
})
afterAll(() => rmSync(base, { recursive: true, force: true }))

test('backup --out a --out b is refused, writing neither', async () => {
  const a = join(base, 'a.tar')
  const b = join(base, 'b.tar')
  const r = await runBinary(['backup', '--out', a, '--out', b, '--data-dir', dir])
  expect(r.code).toBe(2)
  expect(r.stderr).toContain('--out given more than once')
  expect(r.stderr).toContain(a)
  expect(r.stderr).toContain(b)
  expect(existsSync(a) || existsSync(b)).toBe(false)
  // --out=a form counts too.
  expect((await runBinary(['backup', `--out=${a}`, '--out', b, '--data-dir', dir])).stderr).toContain('--out given more than once')
})

test('--data-dir twice (before and after the command) is refused; nothing is created in either', async () => {
  const other = join(base, 'other')
  const r = await runBinary(['--data-dir', dir, 'org', 'create', '--name', 'B', '--data-dir', other])
  expect(r.code).toBe(2)
  expect(r.stderr).toContain('--data-dir given more than once')
  expect(existsSync(other)).toBe(false)
})

test('repeatable flags and repeated switches still work', async () => {
  const org = JSON.parse((await runBinary(['org', 'list', '--json', '--json', '--data-dir', dir])).stdout).data[0].id as string
  const admin = await runBinary(['admin', 'create', '--email', 'a@example.com', '--no-password', '--org', org, '--org', org, '--json', '--data-dir', dir])
  expect(admin.stderr).not.toContain('more than once')
  expect(admin.code).toBe(0)
})
