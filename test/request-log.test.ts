/**
 * The compiled binary's log lines, captured from its stdout: every request line names the client address
 * (X-Forwarded-For's last hop only behind a trusted proxy, like the rate limits), the Org and App it acted
 * for, and never a credential; SIGTERM is logged when it arrives.
 */
import { expect, test } from 'bun:test'
import type { Subprocess } from 'bun'
import { BINARY, call, freePort, tempDir } from './harness'
import { cliTenant, ensureBinary } from './helpers-lifecycle'

interface LogLine {
  msg: string
  [field: string]: unknown
}

/** Starts the binary at log level info with its stdout collected into `text`. */
async function serveCapturing(dataDir: string, env: Record<string, string>) {
  const port = await freePort()
  const proc: Subprocess<'ignore', 'pipe', 'pipe'> = Bun.spawn([BINARY, 'serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir], {
    env: { PATH: process.env.PATH ?? '', FIXLOOP_LOG_LEVEL: 'info', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const out = { text: '' }
  const drained = (async () => {
    const decoder = new TextDecoder()
    for await (const chunk of proc.stdout) out.text += decoder.decode(chunk)
  })()
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 15_000
  while (!(await fetch(url + '/healthz').then((r) => r.ok, () => false))) {
    if (Date.now() > deadline || proc.exitCode !== null) throw new Error('fixloop serve did not become healthy')
    await Bun.sleep(50)
  }
  const lines = (): LogLine[] => out.text.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as LogLine)
  return { url, proc, out, lines, drained }
}

/** The request line with this request id (the logger writes once per event-loop turn: wait for it). */
async function lineFor(lines: () => LogLine[], requestId: string): Promise<LogLine> {
  const deadline = Date.now() + 5000
  for (;;) {
    const line = lines().find((l) => l.msg === 'request' && l.requestId === requestId)
    if (line) return line
    if (Date.now() > deadline) throw new Error(`no request line for ${requestId}`)
    await Bun.sleep(20)
  }
}

const cases: { name: string; trustProxy: boolean; xff?: string; client: string }[] = [
  { name: 'direct, no proxy header', trustProxy: false, client: '127.0.0.1' },
  { name: 'untrusted X-Forwarded-For is ignored', trustProxy: false, xff: '203.0.113.7', client: '127.0.0.1' },
  { name: 'trusted proxy: its own (last) hop, not what the client claimed', trustProxy: true, xff: '198.51.100.1, 203.0.113.9', client: '203.0.113.9' },
]

for (const c of cases) {
  test(`request log lines carry client, Org and App, never a key: ${c.name}`, async () => {
    ensureBinary()
    const dataDir = tempDir()
    const t = await cliTenant(dataDir)
    const server = await serveCapturing(dataDir, c.trustProxy ? { FIXLOOP_TRUST_PROXY: '1' } : {})
    try {
      const headers = (id: string): Record<string, string> => ({ 'x-request-id': id, ...(c.xff ? { 'x-forwarded-for': c.xff } : {}) })
      expect((await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'log line case' }, headers: headers('req-widget') })).status).toBe(201)
      expect((await call(server.url, 'GET', '/v1/feedback', { auth: t.key, headers: headers('req-org') })).status).toBe(200)
      expect((await call(server.url, 'GET', '/v1/feedback/000000000000000000000000', { auth: t.key, headers: headers('req-404') })).status).toBe(404)
      expect((await call(server.url, 'GET', '/v1/feedback', { auth: 'sk_not_a_real_key', headers: headers('req-401') })).status).toBe(401)
      expect((await call(server.url, 'GET', '/healthz', { headers: headers('req-health') })).status).toBe(200)
      // A route that answers with a Response of its own (the dashboard's assets, the SSO pages): its status, not 200.
      expect((await fetch(`${server.url}/admin/assets/no-such-asset.js`, { headers: headers('req-asset-404') })).status).toBe(404)
      // An unmatched path of 15,000 characters, no key: its line keeps 200 of them and says how long it was.
      expect((await call(server.url, 'GET', `/v1/${'b'.repeat(15_000)}`, { headers: headers('req-long') })).status).toBe(404)

      const widget = await lineFor(server.lines, 'req-widget')
      expect({ client: widget.client, orgId: widget.orgId, appId: widget.appId, status: widget.status }).toEqual({ client: c.client, orgId: t.orgId, appId: t.appId, status: 201 })
      const org = await lineFor(server.lines, 'req-org')
      expect({ client: org.client, orgId: org.orgId, appId: org.appId }).toEqual({ client: c.client, orgId: t.orgId, appId: undefined })
      const notFound = await lineFor(server.lines, 'req-404')
      expect({ client: notFound.client, orgId: notFound.orgId, status: notFound.status }).toEqual({ client: c.client, orgId: t.orgId, status: 404 })
      // Refused before any Org is known: the address, no Org.
      const refused = await lineFor(server.lines, 'req-401')
      expect({ client: refused.client, orgId: refused.orgId, status: refused.status }).toEqual({ client: c.client, orgId: undefined, status: 401 })
      expect((await lineFor(server.lines, 'req-health')).client).toBe(c.client)
      expect((await lineFor(server.lines, 'req-asset-404')).status).toBe(404)
      const long = await lineFor(server.lines, 'req-long')
      expect(long.route).toBe(`/v1/${'b'.repeat(196)}… (15004 characters)`)

      server.proc.kill('SIGTERM')
      expect(await server.proc.exited).toBe(0)
      await server.drained
      const msgs = server.lines().map((l) => l.msg)
      const signalAt = msgs.findIndex((m) => m.includes('SIGTERM received'))
      expect(signalAt).toBeGreaterThan(-1)
      expect(server.lines()[signalAt].signal).toBe('SIGTERM')
      expect(msgs.indexOf('fixloop stopped')).toBeGreaterThan(signalAt)
      // No credential anywhere in the log: not the keys used, not the wrong one.
      for (const secret of [t.key, t.pub, t.secret, 'sk_not_a_real_key']) expect(server.out.text).not.toContain(secret)
    } finally {
      if (server.proc.exitCode === null) server.proc.kill('SIGKILL')
    }
  }, 60_000)
}
