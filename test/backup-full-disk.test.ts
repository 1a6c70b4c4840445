/**
 * `fixloop backup` into a folder whose disk fills up or runs out of inodes at each stage (the database
 * copy, the archive's blobs, the first file): exit 2 naming --out, never a crash (exit 1, a stack, a
 * runtime crash report), and nothing left behind, neither the partial archive nor the database copy that
 * would take what little room the disk has. Against the compiled binary on real tmpfs mounts.
 */
import { afterAll, expect, test } from 'bun:test'
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { runBinary, tempDir } from './harness'
import { cliTenant, ensureBinary } from './helpers-lifecycle'
import { mountTmpfs, unmountTmpfs } from './tmpfs'

afterAll(() => unmountTmpfs())

test('backup into a folder without room or inodes: exit 2 naming --out, no partial archive or database copy left', async () => {
  ensureBinary()
  const data = join(tempDir(), 'data')
  const t = await cliTenant(data)
  // A 2 MB object in the embedded store: the database copy fits in 1 MB, the archive does not.
  mkdirSync(join(data, 'blobs', t.appId), { recursive: true, mode: 0o700 })
  writeFileSync(join(data, 'blobs', t.appId, '0123456789abcdef0123456789abcdef'), new Uint8Array(2 * 1024 * 1024).fill(7))
  const cases = [
    ['size=200k', 'the database copy meets a full disk (SQLITE_FULL)'],
    ['size=1m', 'the archive meets a full disk while its blobs are written (ENOSPC)'],
    ['size=4m,nr_inodes=3', 'no inode for SQLite to write the copy (SQLITE_CANTOPEN)'],
    ['size=4m,nr_inodes=2', 'no inode for the copy itself (ENOSPC)'],
  ]
  for (const [options, what] of cases) {
    const out = mountTmpfs('the backup full-disk check', options)
    if (!out) return
    const archive = join(out, 'fixloop.tar')
    const r = await runBinary(['backup', '--out', archive, '--data-dir', data])
    expect({ what, stderr: r.stderr }).not.toEqual({ what, stderr: expect.stringMatching(/\n\s+at |Bun v\d/) })
    expect({ what, stderr: r.stderr }).toEqual({ what, stderr: expect.stringContaining(`--out: cannot write ${archive}`) })
    expect({ what, code: r.code }).toEqual({ what, code: 2 })
    expect({ what, left: readdirSync(out) }).toEqual({ what, left: [] })
    unmountTmpfs(out)
  }
  // With room, the same backup is written.
  const roomy = tempDir('fixloop-backup-out-')
  expect((await runBinary(['backup', '--out', join(roomy, 'fixloop.tar'), '--data-dir', data])).code).toBe(0)
}, 120_000)
