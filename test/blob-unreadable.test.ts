/**
 * The embedded store's download when a stored file cannot be opened by fixloop's user (a blob a restore
 * or a hand copy made as root, under a server running as its own user): the spec's JSON envelope, 503 with
 * Retry-After and a log line naming the file, never Bun's own text/plain "Something went wrong!" 500 that
 * nothing logged. A file that is gone is 404. Against the compiled binary run as `nobody` (root ignores
 * file modes); skipped with a warning where the test cannot switch users.
 */
import { expect, test } from 'bun:test'
import { chmodSync, chownSync, cpSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { BINARY, call, eventually, freePort, tempDir } from './harness'
import { cliTenant, ensureBinary } from './helpers-lifecycle'
import { submitWithScreenshot } from './ops-helpers'

const NOBODY = 65534

test('a stored file fixloop cannot open: 503 with the envelope and a log line; a file gone: 404', async () => {
  ensureBinary()
  if (process.getuid?.() !== 0 || Bun.spawnSync(['which', 'setpriv']).exitCode !== 0) {
    console.warn('skipped the unreadable-blob check: needs root and setpriv to run the server as nobody')
    return
  }
  const parent = tempDir('fixloop-nobody-')
  chmodSync(parent, 0o711)
  const data = join(parent, 'data')
  const t = await cliTenant(data)
  Bun.spawnSync(['chown', '-R', `${NOBODY}:${NOBODY}`, data])
  const port = await freePort()
  const proc = Bun.spawn(['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', BINARY, 'serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', data], {
    env: { PATH: process.env.PATH ?? '', HOME: parent, FIXLOOP_LOG_LEVEL: 'warn', FIXLOOP_MIN_FREE_DISK_MB: '0', FIXLOOP_UPLOAD_MIN_FREE_MB: '0' },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const url = `http://127.0.0.1:${port}`
  try {
    await eventually(async () => (await fetch(url + '/healthz').catch(() => null))?.status === 200, 15_000)
    const { feedbackId, key } = await submitWithScreenshot(url, t.pub)
    const report = await call(url, 'GET', `/v1/feedback/${feedbackId}`, { auth: t.key })
    const download = report.body.attachments[0].url as string
    expect((await fetch(download)).status).toBe(200)

    // Put back by root (a restore, a copy): owned by root, 0600.
    const file = join(data, 'blobs', key)
    cpSync(file, `${file}.copy`)
    rmSync(file)
    cpSync(`${file}.copy`, file)
    chownSync(file, 0, 0)
    chmodSync(file, 0o600)
    const refused = await fetch(download)
    expect(refused.headers.get('content-type')).toContain('application/json')
    const body = (await refused.json()) as { error: { code: string; details: { requestId: string } } }
    expect(refused.status).toBe(503)
    expect(refused.headers.get('retry-after')).toBe('60')
    expect(body.error.code).toBe('internal_error')

    rmSync(file)
    expect((await fetch(download)).status).toBe(404)
    rmSync(dirname(file), { recursive: true })
    expect((await fetch(download)).status).toBe(404)
  } finally {
    proc.kill('SIGTERM')
    await proc.exited
  }
  const log = await new Response(proc.stdout).text()
  expect(log).toContain('cannot read the stored file')
  expect(log).toContain('EACCES')
}, 60_000)
