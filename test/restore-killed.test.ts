/**
 * A backup killed midway leaves its partial archive and the folder of its database copy beside --out;
 * the next backup into that folder removes them (never those of a backup still running).
 *
 * A restore killed midway (kill -9, the OOM killer, a power cut) leaves its staging folder
 * `.restore-<pid>` in the data dir: a copy of the archive's database and blobs, as large as the archive,
 * that nothing ever removed (a later restore only removed its own pid's; a reporter's erasure never
 * reached it). The next restore takes the dir as it is and removes it; so does the next `serve`.
 * Against the compiled binary, with a real kill -9.
 */
import { expect, test } from 'bun:test'
import { cpSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { BINARY, call, runBinary, spawnServer, tempDir } from './harness'
import { cliTenant, ensureBinary } from './helpers-lifecycle'

const staged = (dir: string) => (existsSync(dir) ? readdirSync(dir).filter((n) => n.startsWith('.restore-')) : [])

/** Starts a restore and kills it with SIGKILL while it unpacks (its staging folder exists). */
async function killedRestore(archive: string, target: string, extra: string[] = []): Promise<void> {
  const proc = Bun.spawn([BINARY, 'restore', '--from', archive, '--data-dir', target, ...extra], { env: { PATH: process.env.PATH ?? '' }, stdout: 'ignore', stderr: 'ignore' })
  const deadline = Date.now() + 20_000
  while (staged(target).length === 0 && Date.now() < deadline) await Bun.sleep(1)
  proc.kill('SIGKILL')
  await proc.exited
  expect(staged(target).length).toBe(1)
}

test('a restore killed midway: the next restore and the next serve remove its staging folder', async () => {
  ensureBinary()
  const data = join(tempDir(), 'data')
  const t = await cliTenant(data)
  // 64 MB of blobs: the unpack takes long enough to be killed in.
  mkdirSync(join(data, 'blobs', t.appId), { recursive: true, mode: 0o700 })
  writeFileSync(join(data, 'blobs', t.appId, '0123456789abcdef0123456789abcdef'), new Uint8Array(64 * 1024 * 1024).fill(7))
  const archive = join(tempDir(), 'fixloop.tar')
  expect((await runBinary(['backup', '--out', archive, '--include-master-key', '--data-dir', data])).code).toBe(0)

  // Into a new dir: the retry needs no --force and leaves no staging folder.
  const target = join(tempDir(), 'restored')
  await killedRestore(archive, target)
  const again = await runBinary(['restore', '--from', archive, '--data-dir', target])
  expect(again.stderr).toContain('left by a restore that was killed')
  expect(again.code).toBe(0)
  expect(staged(target)).toEqual([])

  // Over an instance with --force, then serve: the server removes it at start.
  const instance = join(tempDir(), 'instance')
  cpSync(target, instance, { recursive: true })
  await killedRestore(archive, instance, ['--force'])
  const server = await spawnServer(instance)
  try {
    expect(staged(instance)).toEqual([])
    expect((await call(server.url, 'GET', '/v1/apps', { auth: t.key })).status).toBe(200)
  } finally {
    await server.stop()
  }
}, 120_000)

test('a backup killed midway: the next backup into the folder removes its partial archive and database copy', async () => {
  ensureBinary()
  const data = join(tempDir(), 'data')
  const t = await cliTenant(data)
  mkdirSync(join(data, 'blobs', t.appId), { recursive: true, mode: 0o700 })
  writeFileSync(join(data, 'blobs', t.appId, '0123456789abcdef0123456789abcdef'), new Uint8Array(64 * 1024 * 1024).fill(7))
  const folder = tempDir('fixloop-backups-')
  const leftovers = () => readdirSync(folder).filter((n) => n.startsWith('.fixloop-backup-') || n.includes('.partial-'))
  // Killed twice: once while the database is copied (its folder exists), once while blobs are written.
  for (const [n, ready] of [
    [1, () => readdirSync(folder).some((n) => n.startsWith('.fixloop-backup-'))],
    [2, () => readdirSync(folder).some((n) => n.includes('.partial-') && Bun.file(join(folder, n)).size > 1024 * 1024)],
  ] as const) {
    const proc = Bun.spawn([BINARY, 'backup', '--out', join(folder, `nightly-${n}.tar`), '--data-dir', data], { env: { PATH: process.env.PATH ?? '' }, stdout: 'ignore', stderr: 'ignore' })
    const deadline = Date.now() + 20_000
    while (!ready() && Date.now() < deadline) await Bun.sleep(1)
    proc.kill('SIGKILL')
    await proc.exited
    // Its own, and none of the one killed before (this backup removed them at its start).
    expect(leftovers().length).toBeGreaterThanOrEqual(1)
    expect(leftovers().every((n) => n.includes(String(proc.pid)))).toBe(true)
  }
  // A file of someone else's that merely looks alike stays.
  writeFileSync(join(folder, 'notes.partial-1'), 'not an archive')
  const next = await runBinary(['backup', '--out', join(folder, 'nightly-3.tar'), '--data-dir', data])
  expect(next.code).toBe(0)
  expect(next.stderr).toContain('left by a backup that was killed')
  expect(leftovers()).toEqual(['notes.partial-1'])
}, 120_000)
