/**
 * A server under a low open-files limit (`ulimit -n 64`, hard, so Bun cannot raise it) while clients open
 * event streams: every stream holds a file descriptor. Past the limit the server could accept no connection
 * at all (requests, /readyz and submissions waited unanswered while the runtime's accept loop spun a core)
 * until streams closed. Streams are now bounded by what the limit leaves: the ones past it get 429 with
 * Retry-After, and the server keeps answering. The start-up warns about such a limit. Against the binary.
 */
import { expect, test } from 'bun:test'
import { BINARY, call, eventually, freePort, tempDir } from './harness'
import { cliTenant, ensureBinary } from './helpers-lifecycle'

test('event streams under ulimit -n 64 stop at what the limit leaves; the server keeps accepting requests', async () => {
  ensureBinary()
  const dataDir = tempDir()
  const t = await cliTenant(dataDir)
  const port = await freePort()
  const proc = Bun.spawn(['bash', '-c', 'ulimit -n 64 && exec "$0" "$@"', BINARY, 'serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir], {
    env: { PATH: process.env.PATH ?? '', FIXLOOP_LOG_LEVEL: 'warn', FIXLOOP_MIN_FREE_DISK_MB: '0' },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const url = `http://127.0.0.1:${port}`
  const abort = new AbortController()
  try {
    await eventually(async () => (await fetch(url + '/healthz').catch(() => null))?.status === 200, 15_000)
    const statuses: number[] = []
    for (let i = 0; i < 48; i++) {
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
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(16)
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(1)
    expect(statuses).not.toContain(0)
    // The server still answers its checks and takes reports while the streams stay open.
    const ready = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(3000) }).catch(() => null)
    expect(ready?.status).toBe(200)
    const sent = await call(url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'sent while many streams are open' } })
    expect(sent.status).toBe(201)
  } finally {
    abort.abort()
    proc.kill('SIGTERM')
    await proc.exited
  }
  const log = await new Response(proc.stdout).text()
  expect(log).toContain('the open-files limit is 64')
}, 60_000)
