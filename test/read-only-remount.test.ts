/**
 * The data dir's filesystem remounted read-only under a running server, the way the kernel does it after an
 * error (ext4 `errors=remount-ro`, here forced through /sys/fs/ext4/<dev>/trigger_fs_error on a loop image).
 * SQLite then reports SQLITE_IOERR_WRITE / SQLITE_IOERR_FSYNC ("disk I/O error"), not SQLITE_READONLY: the
 * server must still answer 503 with Retry-After (nothing stored, nothing acknowledged), not a 500 with a
 * stack trace per request, and its background loops (worker, webhook dispatch, WAL checkpointer) log the
 * outage in a line each, not every pass. Against the compiled binary.
 */
import { afterAll, expect, test } from 'bun:test'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { BINARY, call, eventually, freePort, runBinary, tempDir } from './harness'
import { cliTenant, ensureBinary } from './helpers-lifecycle'

const mounts: string[] = []
afterAll(() => {
  for (const m of mounts) Bun.spawnSync(['umount', '-l', m])
})

/** An ext4 image mounted with errors=remount-ro, and the sysfs file that makes the kernel remount it read-only. */
function ext4Mount(): { dir: string; trigger: string } | string {
  const dir = tempDir('fixloop-ro-')
  const image = join(dir, 'fs.img')
  const mnt = join(dir, 'mnt')
  mkdirSync(mnt)
  Bun.spawnSync(['truncate', '-s', '64M', image])
  const mkfs = Bun.spawnSync(['mkfs.ext4', '-q', '-F', image])
  if (mkfs.exitCode !== 0) return `mkfs.ext4 failed: ${mkfs.stderr.toString().trim() || `exit ${mkfs.exitCode}`}`
  const mounted = Bun.spawnSync(['mount', '-o', 'loop,errors=remount-ro', image, mnt])
  if (mounted.exitCode !== 0) return `mount -o loop failed: ${mounted.stderr.toString().trim() || `exit ${mounted.exitCode}`}`
  mounts.push(mnt)
  const device = basename(Bun.spawnSync(['findmnt', '-n', '-o', 'SOURCE', mnt]).stdout.toString().trim())
  const trigger = `/sys/fs/ext4/${device}/trigger_fs_error`
  if (!existsSync(trigger)) return `${trigger} does not exist (kernel without it)`
  return { dir: mnt, trigger }
}

test('a filesystem remounted read-only after an error: 503 with Retry-After (no 500), reads still answer, a line of log per loop', async () => {
  ensureBinary()
  const fs = ext4Mount()
  if (typeof fs === 'string') {
    console.warn(`skipped the read-only remount check: ${fs}`)
    return
  }
  const dataDir = join(fs.dir, 'data')
  const t = await cliTenant(dataDir)
  const pw = join(fs.dir, 'pw')
  writeFileSync(pw, 'a long enough password\n')
  expect((await runBinary(['admin', 'create', '--data-dir', dataDir, '--email', 'ops@example.com', '--password-file', pw])).code).toBe(0)
  const port = await freePort()
  const proc = Bun.spawn([BINARY, 'serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir], {
    env: { PATH: process.env.PATH ?? '', FIXLOOP_LOG_LEVEL: 'warn', FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000', FIXLOOP_MIN_FREE_DISK_MB: '0', FIXLOOP_UPLOAD_MIN_FREE_MB: '0' },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const url = `http://127.0.0.1:${port}`
  try {
    await eventually(async () => (await fetch(url + '/healthz').catch(() => null))?.status === 200, 15_000)
    const first = await call(url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'stored before the remount' } })
    expect(first.status).toBe(201)
    await eventually(async () => (await call(url, 'GET', `/v1/feedback/${first.body.id}`, { auth: t.key })).body.status === 'awaiting_manual', 15_000)

    writeFileSync(fs.trigger, 'fixloop test\n')
    expect(Bun.spawnSync(['findmnt', '-n', '-o', 'OPTIONS', fs.dir]).stdout.toString()).toMatch(/\bro\b|emergency_ro/)

    const writes = [
      () => call(url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'after the remount' } }),
      () => call(url, 'POST', '/v1/feedback/upload-url', { auth: t.pub, body: { contentType: 'image/png', byteSize: 1000, kind: 'screenshot' } }),
      // Dashboard sign-in writes a session (and an audit entry).
      () => call(url, 'POST', '/admin/api/session', { body: { email: 'ops@example.com', password: 'a long enough password' } }),
      () => call(url, 'PATCH', `/v1/feedback/${first.body.id}`, { auth: t.key, body: { status: 'archived' } }),
    ]
    for (const w of writes) {
      const r = await w()
      expect(r.status).toBe(503)
      expect(r.headers.get('retry-after')).toBe('60')
      expect(r.body.error.code).toBe('internal_error')
      expect(r.body.error.details.requestId).toMatch(/^[0-9a-f]{24}$/)
    }
    // Reads still answer.
    expect((await call(url, 'GET', `/v1/feedback/${first.body.id}`, { auth: t.key })).status).toBe(200)
    const ready = await call(url, 'GET', '/readyz')
    expect(ready.status).toBe(503)
    expect(ready.body.error.details.checks.database.ok).toBe(false)
    // A few passes of the checkpointer (every second) and the webhook dispatcher (every 200 ms).
    await Bun.sleep(3000)
  } finally {
    proc.kill('SIGTERM')
    await proc.exited
  }
  const log = await new Response(proc.stdout).text()
  expect(log).not.toContain('unhandled error')
  const lines = (msg: string) => log.split('\n').filter((l) => l.includes(`"msg":"${msg}"`)).length
  expect(lines('database unavailable')).toBeGreaterThanOrEqual(1)
  expect(lines('database unavailable')).toBeLessThanOrEqual(2)
  expect(lines('wal checkpoint failed')).toBeLessThanOrEqual(1)
  expect(lines('webhook dispatch failed')).toBeLessThanOrEqual(1)
}, 90_000)
