/**
 * `serve` and every CLI command on a data dir the machine will not let SQLite use: no inodes left for
 * `-wal`/`-shm`, a file system mounted read-only, a full disk, a damaged (truncated) `fixloop.db`, a `-wal`
 * that is not a file. Each is the operator's to fix: exit 2 with the database's path and the cause, never
 * exit 1 with SQLite's bare "unable to open database file" and a stack trace. Against the compiled binary,
 * on real tmpfs mounts (skipped with a warning where mount is not allowed).
 */
import { afterAll, expect, test } from 'bun:test'
import { cpSync, mkdirSync, rmSync, truncateSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { BINARY, freePort, runBinary, tempDir } from './harness'
import { cliTenant, ensureBinary } from './helpers-lifecycle'
import { serveExpectingExit } from './ops-helpers'
import { mountTmpfs, unmountTmpfs } from './tmpfs'

afterAll(() => unmountTmpfs())

/** A tmpfs holding a copy of `source` as `data`; undefined (with a warning) where mount is refused. */
function mountedCopy(source: string, options: string): string | undefined {
  const dir = mountTmpfs('this check', options)
  if (!dir) return undefined
  cpSync(source, join(dir, 'data'), { recursive: true })
  return dir
}

/** Exit 2, one line naming the database and the cause, no stack. */
function refused(r: { code: number; stderr: string }, file: string, cause: RegExp): void {
  expect(r.stderr).not.toMatch(/\n\s+at /)
  expect(r.stderr).toContain(file)
  expect(r.stderr).toMatch(cause)
  expect(r.code).toBe(2)
}

let source: string | undefined
async function instance(): Promise<string> {
  if (source) return source
  ensureBinary()
  source = join(tempDir(), 'data')
  await cliTenant(source)
  return source
}

test('no inodes left for -wal/-shm: serve and the CLI exit 2 naming the database and the cause', async () => {
  const src = await instance()
  const dir = mountedCopy(src, 'size=16m,nr_inodes=64')
  if (!dir) return
  const data = join(dir, 'data')
  mkdirSync(join(dir, 'eat'))
  for (let i = 0; i < 100; i++) {
    try {
      writeFileSync(join(dir, 'eat', String(i)), '')
    } catch {
      break
    }
  }
  refused(await runBinary(['org', 'list', '--data-dir', data]), join(data, 'fixloop.db'), /no free inodes/)
  refused(await serveExpectingExit(data), join(data, 'fixloop.db'), /no free inodes/)
  rmSync(join(dir, 'eat'), { recursive: true })
  expect((await runBinary(['org', 'list', '--data-dir', data])).code).toBe(0)
}, 60_000)

test('a file system mounted read-only: serve and the CLI exit 2 saying so', async () => {
  const src = await instance()
  const dir = mountedCopy(src, 'size=16m')
  if (!dir) return
  const data = join(dir, 'data')
  expect(Bun.spawnSync(['mount', '-o', 'remount,ro', dir]).exitCode).toBe(0)
  refused(await runBinary(['org', 'list', '--data-dir', data]), join(data, 'fixloop.db'), /read-only/)
  refused(await serveExpectingExit(data), join(data, 'fixloop.db'), /read-only/)
}, 60_000)

test('a full disk with a -wal left by a killed server: serve and a CLI write exit 2 saying the disk is full', async () => {
  const src = await instance()
  const dir = mountedCopy(src, 'size=16m')
  if (!dir) return
  const data = join(dir, 'data')
  const port = await freePort()
  const proc = Bun.spawn([BINARY, 'serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', data], { env: { PATH: process.env.PATH ?? '', FIXLOOP_LOG_LEVEL: 'warn' }, stdout: 'ignore', stderr: 'ignore' })
  for (let i = 0; i < 100 && (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => null))?.status !== 200; i++) await Bun.sleep(100)
  proc.kill('SIGKILL')
  await proc.exited
  // Every byte: large blocks, then small ones (again after each command: its close may free the -wal's pages).
  let fills = 0
  const fill = () => {
    Bun.spawnSync(['dd', 'if=/dev/zero', `of=${join(dir, `filler${fills++}`)}`, 'bs=1M', 'count=64'])
    for (let i = 0; i < 3; i++) Bun.spawnSync(['dd', 'if=/dev/zero', `of=${join(dir, `filler${fills++}`)}`, 'bs=512', 'count=100000'])
  }
  fill()
  refused(await serveExpectingExit(data), join(data, 'fixloop.db'), /full/)
  // A CLI write: SQLite may still find a free page or two in the file, so the first few may fit.
  let r = { code: 0, stdout: '', stderr: '' }
  for (let i = 0; i < 10 && r.code === 0; i++) {
    fill()
    r = await runBinary(['org', 'create', '--name', 'No room', '--data-dir', data])
  }
  refused(r, join(data, 'fixloop.db'), /full/)
}, 60_000)

test('a truncated fixloop.db and a -wal that is a folder: exit 2 naming the file', async () => {
  const src = await instance()
  const damaged = join(tempDir(), 'data')
  cpSync(src, damaged, { recursive: true })
  truncateSync(join(damaged, 'fixloop.db'), 100_000)
  refused(await serveExpectingExit(damaged), join(damaged, 'fixloop.db'), /damaged.*fixloop restore/)
  refused(await runBinary(['org', 'list', '--data-dir', damaged]), join(damaged, 'fixloop.db'), /damaged/)

  const walDir = join(tempDir(), 'data')
  cpSync(src, walDir, { recursive: true })
  mkdirSync(join(walDir, 'fixloop.db-wal'))
  refused(await serveExpectingExit(walDir), join(walDir, 'fixloop.db'), /fixloop\.db-wal is not a file/)
}, 60_000)
