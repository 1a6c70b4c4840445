/**
 * S3/MinIO failing under a running server (the compiled binary, real PostgreSQL, Redis and s3rver behind
 * test/s3-fault-proxy.ts): a submission that references an upload checks and seals the object in S3, so it
 * meets the outage. Refused connections, a server that takes connections and never answers, and `503
 * SlowDown` all answer the spec's envelope as 503 with Retry-After within seconds: before, a stalled S3
 * held the request for as long as it stalled (no timeout in the S3 client) and a 503 from S3 was a 500.
 * Nothing is acknowledged that was not stored, and the same submission succeeds once S3 answers again.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { call, runBinary, spawnServer, tempDir } from './harness'
import { clusterEnv } from './cluster-env'
import { s3FaultProxy, type S3Fault } from './s3-fault-proxy'

const dirs: string[] = []
const dir = (prefix: string) => {
  const d = tempDir(prefix)
  dirs.push(d)
  return d
}
let proxy: ReturnType<typeof s3FaultProxy>
let env: Record<string, string>
beforeAll(async () => {
  const direct = await clusterEnv(undefined, { migrated: true })
  proxy = s3FaultProxy(Number(new URL(direct.FIXLOOP_S3_ENDPOINT).port))
  env = { ...direct, FIXLOOP_S3_ENDPOINT: `http://127.0.0.1:${proxy.port}` }
})
afterAll(() => {
  proxy?.stop()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

async function cli(args: string[]): Promise<any> {
  const r = await runBinary([...args, '--json', '--data-dir', dir('fixloop-s3-cli-')], env)
  if (r.code !== 0) throw new Error(`fixloop ${args.join(' ')}: exit ${r.code}: ${r.stderr}`)
  return JSON.parse(r.stdout)
}

test('S3 refusing, stalled or throttling while a submission references an upload: 503 with Retry-After within seconds, never a 500 or a hung request; 201 once it answers', async () => {
  const org = await cli(['org', 'create', '--name', 'Acme'])
  const key = (await cli(['key', 'create', '--org', org.id])).key
  const app = await cli(['app', 'create', '--org', org.id, '--name', 'Shop'])
  const node = await spawnServer(dir('fixloop-s3-node-'), env)
  const png = new Uint8Array(64).fill(7)
  const uploaded = async (): Promise<string> => {
    const u = await call(node.url, 'POST', '/v1/feedback/upload-url', { auth: app.publicKey, body: { contentType: 'image/png', byteSize: png.byteLength, kind: 'screenshot', filename: 'cart.png' } })
    expect(u.status).toBe(200)
    expect((await fetch(u.body.url, { method: 'PUT', headers: u.body.headers, body: png })).status).toBe(200)
    return u.body.key
  }
  const submit = (upload: string) =>
    call(node.url, 'POST', '/v1/feedback', {
      auth: app.publicKey,
      body: { text: 'The cart total is wrong', attachments: [{ key: upload, kind: 'screenshot', contentType: 'image/png', byteSize: png.byteLength }] },
    })
  try {
    for (const fault of ['reset', 'hang', 'busy'] as S3Fault[]) {
      const upload = await uploaded()
      proxy.set(fault)
      const t0 = performance.now()
      const r = await submit(upload).catch((e) => ({ status: -1, body: { error: { code: String(e) } }, headers: new Headers() }))
      const ms = performance.now() - t0
      proxy.set('pass')
      expect({ fault, status: r.status, code: r.body?.error?.code, retry: r.headers.get('retry-after') }).toEqual({ fault, status: 503, code: 'internal_error', retry: '5' })
      expect({ fault, fast: ms < 20_000 }).toEqual({ fault, fast: true })
      // Not stored: the same submission goes through once S3 answers, and the report lists its screenshot.
      const again = await submit(upload)
      expect({ fault, status: again.status }).toEqual({ fault, status: 201 })
      const report = await call(node.url, 'GET', `/v1/feedback/${again.body.id}`, { auth: key })
      expect(report.body.attachments.map((a: { key: string }) => a.key)).toEqual([upload])
    }
    expect(node.proc.exitCode).toBeNull()
  } finally {
    proxy.set('pass')
    await node.stop()
  }
}, 120_000)

test("a reporter's erasure while S3 stalls: answered within seconds, the reports gone; the objects it could not remove are left to the collection job", async () => {
  const org = await cli(['org', 'create', '--name', 'Erasing'])
  const key = (await cli(['key', 'create', '--org', org.id])).key
  const app = await cli(['app', 'create', '--org', org.id, '--name', 'Shop'])
  const node = await spawnServer(dir('fixloop-s3-node-'), env)
  const png = new Uint8Array(64).fill(9)
  try {
    for (let i = 0; i < 3; i++) {
      const u = await call(node.url, 'POST', '/v1/feedback/upload-url', { auth: app.publicKey, body: { contentType: 'image/png', byteSize: png.byteLength, kind: 'screenshot', filename: 'x.png' } })
      expect((await fetch(u.body.url, { method: 'PUT', headers: u.body.headers, body: png })).status).toBe(200)
      const r = await call(node.url, 'POST', '/v1/feedback', {
        auth: app.publicKey,
        body: { text: `The search box loses focus ${i}`, identity: { email: 'jane@example.com' }, attachments: [{ key: u.body.key, kind: 'screenshot', contentType: 'image/png', byteSize: png.byteLength }] },
      })
      expect(r.status).toBe(201)
    }
    proxy.set('hang')
    const t0 = performance.now()
    const erased = await call(node.url, 'POST', '/v1/reporters/erase', { auth: key, body: { email: 'jane@example.com' } })
    const ms = performance.now() - t0
    proxy.set('pass')
    expect(erased.status).toBe(200)
    expect(erased.body.erased).toBe(3)
    // One S3 timeout, not one per attachment (each waited out the 10 s bound before).
    expect(ms).toBeLessThan(20_000)
  } finally {
    proxy.set('pass')
    await node.stop()
  }
}, 120_000)

