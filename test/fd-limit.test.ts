/**
 * A server under a low open-files limit (`ulimit -n 64`, hard, so Bun cannot raise it) while clients open
 * event streams: every stream holds a file descriptor. Past the limit the server could accept no connection
 * at all (requests, /readyz and submissions waited unanswered while the runtime's accept loop spun a core)
 * until streams closed. Streams are now bounded by what the limit leaves: the ones past it get 429 with
 * Retry-After, and the server keeps answering. The start-up warns about such a limit. Against the binary.
 */
import { expect, test } from 'bun:test'
import { readdirSync } from 'node:fs'
import { call, eventually, spawnLoggedServer, tempDir } from './harness'
import { cliTenant, ensureBinary } from './helpers-lifecycle'

test('event streams under ulimit -n 64 stop at what the limit leaves; the server keeps accepting requests', async () => {
  ensureBinary()
  const dataDir = tempDir()
  const t = await cliTenant(dataDir)
  const { url, stop } = await spawnLoggedServer(dataDir, { FIXLOOP_MIN_FREE_DISK_MB: '0' }, ['bash', '-c', 'ulimit -n 64 && exec "$0" "$@"'])
  const abort = new AbortController()
  let log = ''
  try {
    const statuses: number[] = []
    for (let i = 0; i < 24; i++) {
      // Given up when no answer comes within 3 s; an answered stream stays open until the test ends.
      const unanswered = setTimeout(() => abort.abort(), 3000)
      const r = await fetch(`${url}/v1/events/stream`, { headers: { authorization: `Bearer ${t.key}` }, signal: abort.signal }).catch(() => null)
      clearTimeout(unanswered)
      statuses.push(r?.status ?? 0)
      if (r && r.status !== 200) {
        expect(r.headers.get('retry-after')).toBe('60')
        expect(((await r.json()) as { error: { code: string; details: { scope: string } } }).error).toMatchObject({ code: 'rate_limited', details: { scope: 'server' } })
      }
    }
    // Some streams opened, the rest were refused with an answer (none hung unanswered: status 0).
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(4)
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(1)
    expect(statuses).not.toContain(0)
    // The server still answers its checks and takes reports while the streams stay open.
    const ready = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(3000) }).catch(() => null)
    expect(ready?.status).toBe(200)
    const sent = await call(url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'sent while many streams are open' } })
    expect(sent.status).toBe(201)
  } finally {
    abort.abort()
    log = await stop()
  }
  expect(log).toContain('the open-files limit is 64')
}, 60_000)

test('an upload arriving when the open-files limit is reached: 503 with Retry-After, not a 500 with a stack', async () => {
  ensureBinary()
  if (Bun.spawnSync(['which', 'prlimit']).exitCode !== 0) {
    console.warn('skipped the EMFILE upload check: no prlimit')
    return
  }
  const dataDir = tempDir()
  const t = await cliTenant(dataDir)
  const { url, proc, stop } = await spawnLoggedServer(dataDir, { FIXLOOP_MIN_FREE_DISK_MB: '0', FIXLOOP_UPLOAD_MIN_FREE_MB: '0' })
  let log = ''
  let socket: { end(): void } | undefined
  // The soft limit only (raising a hard limit again needs a capability a container may lack).
  const limit = (n: number | string) => Bun.spawnSync(['prlimit', `--pid=${proc.pid}`, `--nofile=${n}:`]).exitCode
  const hard = () => Bun.spawnSync(['prlimit', `--pid=${proc.pid}`, '--nofile', '--noheadings', '--output=HARD']).stdout.toString().trim()
  const port = Number(new URL(url).port)
  try {
    const bytes = new Uint8Array(1000).fill(1)
    const issued = await call(url, 'POST', '/v1/feedback/upload-url', { auth: t.pub, body: { contentType: 'image/png', byteSize: bytes.length, kind: 'screenshot' } })
    expect(issued.status).toBe(200)
    // A connection the server has accepted, then the limit lowered to what it holds: the next file it
    // opens (the upload's) is refused with EMFILE.
    const held = () => readdirSync(`/proc/${proc.pid}/fd`).length
    // Once the start-up's threads have opened what they keep (a limit reached earlier stalls them).
    let before = held()
    for (let i = 0; i < 20; i++) {
      await Bun.sleep(500)
      const now = held()
      if (now === before && i >= 3) break
      before = now
    }
    let text = ''
    let ended!: () => void
    const answered = new Promise<void>((r) => (ended = r))
    const s = await Bun.connect({
      hostname: '127.0.0.1',
      port,
      socket: {
        data: (_s, d) => void (text += Buffer.from(d).toString()),
        close: () => ended(),
        error: () => ended(),
      },
    })
    socket = s
    // Accepted: the server holds one descriptor more.
    await eventually(() => held() > before, 5000)
    expect(limit(held())).toBe(0)
    const target = new URL(issued.body.url)
    s.write(`PUT ${target.pathname}${target.search} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: image/png\r\nContent-Length: ${bytes.length}\r\nConnection: close\r\n\r\n`)
    s.write(bytes)
    await Promise.race([answered, Bun.sleep(5000)])
    expect(limit(hard())).toBe(0)
    expect(text.split('\r\n')[0]).toBe('HTTP/1.1 503 Service Unavailable')
    expect(text.toLowerCase()).toContain('retry-after: 5')
    expect(text).toContain('"code":"internal_error"')
    // Descriptors back: the same upload URL takes the bytes.
    expect((await fetch(issued.body.url, { method: 'PUT', headers: issued.body.headers, body: bytes })).status).toBe(200)
  } finally {
    socket?.end()
    limit(hard())
    log = await stop()
  }
  expect(log).not.toContain('unhandled error')
  expect(log).toContain('EMFILE')
}, 60_000)
