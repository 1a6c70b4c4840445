/**
 * Bodies that arrive and never end, against the compiled binary. A JSON body is read whole before it is
 * authenticated, so a client without any key could open connections, send 8 MB less a byte on each and
 * wait: the server held every one (100 connections from one address took it from 120 MB to 900 MB;
 * enough of them end in an out-of-memory kill). The body budget (src/http/body-budget.ts) takes each
 * body's bytes before it is read, per client address (429) and in all (503), and gives them back once it
 * is parsed, refused or abandoned.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connect, type Socket } from 'node:net'
import { readFileSync, rmSync } from 'node:fs'
import { runBinary, spawnServer, tempDir } from './harness'
import { TEST_DIALECT, clusterEnv } from './cluster-env'

const BODY = 8_000_000
let dir: string
let env: Record<string, string> = {}
let pub = ''
let appId = ''

async function cli(...args: string[]) {
  const r = await runBinary([...args, '--data-dir', dir, '--json'], env)
  if (r.code !== 0) throw new Error(r.stderr)
  return JSON.parse(r.stdout)
}

beforeAll(async () => {
  dir = tempDir('fixloop-body-budget-')
  if (TEST_DIALECT === 'pg') env = await clusterEnv()
  const org = await cli('org', 'create', '--name', 'Budget')
  const app = await cli('app', 'create', '--org', org.id, '--name', 'Budget')
  pub = app.publicKey
  appId = app.id
}, 60_000)
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** A POST whose body stops two bytes short: the server waits for the rest while the socket is open. */
function heldBody(url: string, opts: { auth?: string; chunked?: boolean; path?: string; size?: number } = {}): Promise<Socket> {
  const size = opts.size ?? BODY
  const { port } = new URL(url)
  return new Promise((resolve, reject) => {
    const s = connect(Number(port), '127.0.0.1', () => {
      const head = [`POST ${opts.path ?? '/v1/feedback'} HTTP/1.1`, 'Host: 127.0.0.1', 'Content-Type: application/json', `Authorization: Bearer ${opts.auth ?? 'pub_not_a_key'}`]
      head.push(opts.chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${size}`)
      s.write(head.join('\r\n') + '\r\n\r\n')
      const payload = Buffer.from('{"text":"' + 'x'.repeat(size - 11))
      // Chunked: one chunk, and no terminating chunk.
      s.write(opts.chunked ? Buffer.concat([Buffer.from(`${payload.length.toString(16)}\r\n`), payload, Buffer.from('\r\n')]) : payload, () => resolve(s))
    })
    s.on('error', () => {})
    s.once('error', reject)
  })
}

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024

const post = (url: string, body: string) => fetch(`${url}/v1/feedback`, { method: 'POST', headers: { authorization: `Bearer ${pub}`, 'content-type': 'application/json' }, body })
const bigJson = () => JSON.stringify({ text: 'x'.repeat(BODY - 20) })

describe('bodies that never end', () => {
  test('60 connections each holding 8 MB (Content-Length or chunked, no key) do not grow the server; the address gets 429 with Retry-After', async () => {
    // 24 MB for the address once multiplied by the load-test multiplier (the next test).
    const server = await spawnServer(dir, { ...env, FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000', FIXLOOP_BODY_BUFFER_PER_ADDRESS_MB: '0.024' })
    const held: Socket[] = []
    try {
      const before = rssMb(server.proc.pid)
      for (let i = 0; i < 60; i++) held.push(await heldBody(server.url, { chunked: i % 2 === 1 }))
      await Bun.sleep(1500)
      const grown = rssMb(server.proc.pid) - before
      // Before the budget: ~480 MB more (8 MB a connection). Now three bodies of the address are held.
      expect(grown).toBeLessThan(150)
      const refused = await post(server.url, bigJson())
      expect(refused.status).toBe(429)
      expect(refused.headers.get('retry-after')).toBe('1')
      expect(((await refused.json()) as any).error.code).toBe('rate_limited')
      // Small bodies of others still get through; the server answers at once.
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200)
      // Abandoned bodies give their share back: once the connections close, an 8 MB body is read again
      // (and refused by the schema, as it would be without any attack).
      for (const s of held.splice(0)) s.destroy()
      let after: Response | undefined
      for (const deadline = Date.now() + 10_000; Date.now() < deadline; await Bun.sleep(100)) {
        after = await post(server.url, bigJson())
        if (after.status !== 429) break
      }
      expect(after!.status).toBe(400)
      expect(((await after!.json()) as any).error.code).toBe('invalid_body')
    } finally {
      for (const s of held) s.destroy()
      await server.stop()
    }
  }, 60_000)

  test('the address budget grows with FIXLOOP_RATE_LIMIT_MULTIPLIER, as every per-address limit does (load tests from one address)', async () => {
    const server = await spawnServer(dir, { ...env, FIXLOOP_RATE_LIMIT_MULTIPLIER: '2', FIXLOOP_BODY_BUFFER_PER_ADDRESS_MB: '8.5' })
    const held: Socket[] = []
    try {
      held.push(await heldBody(server.url))
      await Bun.sleep(300)
      // 17 MB for the address: a second 8 MB body is read (and refused by the schema, as it would be anyway)…
      const second = await post(server.url, bigJson())
      expect(second.status).toBe(400)
      held.push(await heldBody(server.url))
      await Bun.sleep(300)
      // …a third beside two held ones is not.
      const third = await post(server.url, bigJson())
      expect(third.status).toBe(429)
      expect(((await third.json()) as any).error.code).toBe('rate_limited')
    } finally {
      for (const s of held) s.destroy()
      await server.stop()
    }
  }, 60_000)

  test('the whole server has a budget too (FIXLOOP_BODY_BUFFER_MB): past it, 503 (internal_error of spec part 7, with the request id) and Retry-After', async () => {
    const server = await spawnServer(dir, { ...env, FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000', FIXLOOP_BODY_BUFFER_MB: '20', FIXLOOP_BODY_BUFFER_PER_ADDRESS_MB: '0' })
    const held: Socket[] = []
    try {
      for (let i = 0; i < 2; i++) held.push(await heldBody(server.url))
      await Bun.sleep(500)
      const refused = await post(server.url, bigJson())
      expect(refused.status).toBe(503)
      expect(refused.headers.get('retry-after')).toBe('1')
      const error = ((await refused.json()) as any).error
      expect(error.code).toBe('internal_error')
      expect(error.details.requestId).toBe(refused.headers.get('x-request-id'))
      expect(error.message).toContain('too many request bodies')
      // A small body still fits.
      expect((await post(server.url, JSON.stringify({ text: 'a small report' }))).status).toBe(201)
    } finally {
      for (const s of held) s.destroy()
      await server.stop()
    }
  }, 60_000)

  test('the webhook routes that read their raw body (git-host and tracker hooks) count against the same budget', async () => {
    const server = await spawnServer(dir, { ...env, FIXLOOP_BODY_BUFFER_PER_ADDRESS_MB: '2' })
    const held: Socket[] = []
    try {
      for (const route of ['git-hooks', 'tracker-hooks']) held.push(await heldBody(server.url, { path: `/v1/${route}/${appId}`, size: 1_000_000 }))
      await Bun.sleep(500)
      for (const route of ['git-hooks', 'tracker-hooks']) {
        const r = await fetch(`${server.url}/v1/${route}/${appId}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-github-event': 'ping' }, body: JSON.stringify({ zen: 'x'.repeat(900_000) }) })
        expect(r.status).toBe(429)
      }
      for (const s of held.splice(0)) s.destroy()
      // Given back once abandoned: the same delivery is read again (and refused for its signature).
      let after: Response | undefined
      for (const deadline = Date.now() + 10_000; Date.now() < deadline; await Bun.sleep(100)) {
        after = await fetch(`${server.url}/v1/git-hooks/${appId}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-github-event': 'ping' }, body: JSON.stringify({ zen: 'x'.repeat(900_000) }) })
        if (after.status !== 429) break
      }
      expect(after!.status).toBe(401)
    } finally {
      for (const s of held) s.destroy()
      await server.stop()
    }
  }, 60_000)

  test('a lone body always fits, whatever the limits', async () => {
    const server = await spawnServer(dir, { ...env, FIXLOOP_BODY_BUFFER_MB: '1', FIXLOOP_BODY_BUFFER_PER_ADDRESS_MB: '1' })
    try {
      const r = await post(server.url, bigJson())
      expect(r.status).toBe(400)
      expect(((await r.json()) as any).error.code).toBe('invalid_body')
    } finally {
      await server.stop()
    }
  }, 60_000)
})

