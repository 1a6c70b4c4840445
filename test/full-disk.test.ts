/**
 * A full disk under a running server (the data dir on a real tmpfs, filled with dd): submissions are 503
 * with Retry-After and the spec's envelope, never a 500 and never a 201 for a report that was not stored;
 * the log says so in a line or two, not one error per request; once room is made, the server takes reports
 * again without a restart and every report it acknowledged, before or during, is stored and processed.
 * Against the compiled binary.
 */
import { afterAll, expect, test } from 'bun:test'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { call, eventually, spawnLoggedServer } from './harness'
import { cliTenant, ensureBinary } from './helpers-lifecycle'
import { mountTmpfs, unmountTmpfs } from './tmpfs'

afterAll(() => unmountTmpfs())

/** A report's text: random words, so that no two cluster together and each takes real room. */
const text = (n: number): string => `full disk report ${n}: ` + Array.from({ length: 300 }, () => Math.random().toString(36).slice(2, 10)).join(' ')

test('a full disk: 503 with Retry-After (no 500, no unsaved 201), a line or two of log, and everything acknowledged kept and processed once room is made', async () => {
  ensureBinary()
  const dir = mountTmpfs('the full-disk check', 'size=24m')
  if (!dir) return
  const dataDir = join(dir, 'data')
  mkdirSync(dataDir)
  const t = await cliTenant(dataDir)
  // FIXLOOP_UPLOAD_MIN_FREE_MB 0: the upload's own write meets the full disk (not the check before it).
  const { url, stop } = await spawnLoggedServer(dataDir, { FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000', FIXLOOP_UPLOAD_MIN_FREE_MB: '0' })
  let log = ''
  try {
    const acknowledged: string[] = []
    const submit = async (n: number) => {
      const r = await call(url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: text(n) } })
      if (r.status === 201) acknowledged.push(r.body.id)
      return r
    }
    expect((await submit(0)).status).toBe(201)
    // An upload URL issued while there was room; its bytes arrive once there is none.
    const bytes = crypto.getRandomValues(new Uint8Array(60_000))
    const issued = await call(url, 'POST', '/v1/feedback/upload-url', { auth: t.pub, body: { contentType: 'image/png', byteSize: bytes.byteLength, kind: 'screenshot' } })
    expect(issued.status).toBe(200)
    const put = () => fetch(issued.body.url, { method: 'PUT', headers: issued.body.headers, body: bytes })

    Bun.spawnSync(['dd', 'if=/dev/zero', `of=${join(dir, 'filler')}`, 'bs=1M', 'count=64'])
    // 400 KB given back: reports still fit in the WAL for a while, then copying them into fixloop.db
    // (which must grow) fails too, as on a disk that fills up under load.
    Bun.spawnSync(['truncate', '-s', '-400K', join(dir, 'filler')])
    const refused: Awaited<ReturnType<typeof call>>[] = []
    for (let n = 1; n <= 30; n++) {
      const r = await submit(n)
      // SQLite may still fit a report or two in WAL pages it had: those are stored, and acknowledged.
      expect([201, 503]).toContain(r.status)
      if (r.status === 503) refused.push(r)
    }
    expect(refused.length).toBeGreaterThanOrEqual(10)
    for (const r of refused) {
      expect(r.headers.get('retry-after')).toBe('60')
      expect(r.body.error.code).toBe('internal_error')
      expect(r.body.error.details.requestId).toMatch(/^[0-9a-f]{24}$/)
    }

    // The embedded blob store's write refused (ENOSPC): 503 too, and no partial file left behind.
    const refusedPut = await put()
    expect(refusedPut.status).toBe(503)
    expect(refusedPut.headers.get('retry-after')).toBe('60')
    expect(((await refusedPut.json()) as { error: { code: string } }).error.code).toBe('internal_error')
    expect(Bun.spawnSync(['find', join(dataDir, 'blobs'), '-name', '*.part-*']).stdout.toString()).toBe('')

    // A few seconds full: the WAL checkpointer fails twice a second and the worker cannot move its job.
    await Bun.sleep(3000)
    rmSync(join(dir, 'filler'))
    expect((await put()).status).toBeLessThan(300)
    // Room again: taken without a restart.
    await eventually(async () => (await submit(100)).status === 201, 10_000)
    // Everything acknowledged is stored and processed (manual mode ends awaiting_manual), none failed, within
    // seconds: a job whose failure could not be written is handed back, not left to its lease's minute.
    for (const id of acknowledged) {
      const status = await eventually(async () => {
        const g = await call(url, 'GET', `/v1/feedback/${id}`, { auth: t.key })
        expect(g.status).toBe(200)
        return ['received', 'sanitizing', 'sanitized'].includes(g.body.status) ? undefined : g.body.status
      }, 15_000)
      expect(status).toBe('awaiting_manual')
    }
  } finally {
    log = await stop()
  }
  // No stack trace per request: the outage is a line or two, each request still answered with its requestId.
  expect(log).not.toContain('unhandled error')
  const outageLines = log.split('\n').filter((l) => l.includes('"database unavailable"'))
  expect(outageLines.length).toBeGreaterThanOrEqual(1)
  expect(outageLines.length).toBeLessThanOrEqual(2)
  // No unhandled rejection (a blob write's ENOSPC reported late), and the checkpointer's failures once per
  // 30 s, not each second.
  expect(log).not.toContain('without handling its error')
  expect(log.split('\n').filter((l) => l.includes('"wal checkpoint failed"')).length).toBeLessThanOrEqual(2)
}, 90_000)

test('no inodes left (bytes to spare): /readyz fails its disk check, upload-url is 503 not_ready, reports are still taken', async () => {
  ensureBinary()
  const dir = mountTmpfs('the inode check', 'size=64m,nr_inodes=200')
  if (!dir) return
  const dataDir = join(dir, 'data')
  mkdirSync(dataDir)
  const t = await cliTenant(dataDir)
  // Byte thresholds far below the 64 MB the tmpfs has free: only the inodes can fail the checks.
  const { url, stop } = await spawnLoggedServer(dataDir, { FIXLOOP_MIN_FREE_DISK_MB: '1', FIXLOOP_UPLOAD_MIN_FREE_MB: '1' })
  try {
    await eventually(async () => (await fetch(url + '/readyz').catch(() => null))?.status === 200, 15_000)
    mkdirSync(join(dir, 'eat'))
    for (let i = 0; i < 400; i++) {
      try {
        writeFileSync(join(dir, 'eat', String(i)), '')
      } catch {
        break
      }
    }
    const ready = await call(url, 'GET', '/readyz')
    expect(ready.status).toBe(503)
    expect(ready.body.error.details.checks.disk).toMatchObject({ ok: false, reason: expect.stringContaining('inodes free') })
    const issued = await call(url, 'POST', '/v1/feedback/upload-url', { auth: t.pub, body: { contentType: 'image/png', byteSize: 1000, kind: 'screenshot' } })
    expect(issued.status).toBe(503)
    expect(issued.body.error.code).toBe('internal_error')
    expect(issued.body.error.details.reason).toContain('disk is nearly full')
    expect((await call(url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'no inodes, still taken' } })).status).toBe(201)
    rmSync(join(dir, 'eat'), { recursive: true })
    expect((await call(url, 'GET', '/readyz')).status).toBe(200)
  } finally {
    await stop()
  }
}, 60_000)
