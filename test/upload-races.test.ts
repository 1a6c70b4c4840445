/**
 * Upload races (issue 10.6): two PUTs to one upload URL never both succeed (embedded store, within one
 * process and across processes through the file system), and an object a submission referenced cannot
 * be replaced afterwards: not on the embedded store, and not on S3 (s3rver), where a presigned PUT
 * stays valid for 15 minutes and the bucket accepts it — the report keeps the object it was checked with.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import S3rver from 's3rver'
import { readFileSync } from 'node:fs'
import { call, seedTenant, startTestServer, tempDir, type Tenant, type TestServer } from './harness'
import { EmbeddedBlobStore } from '../src/blobs/embedded-store'
import { TEST_DIALECT } from './cluster-env'

/**
 * PostgreSQL mode keeps every blob in S3 (the harness gives each server the file's s3rver): the server has
 * no embedded store there, so the tests of the embedded store's own PUT route and files run in SQLite mode only.
 */
const embeddedStoreOnly = test.skipIf(TEST_DIALECT === 'pg')

const SIZE = 256 * 1024
const bytesOf = (seed: number) => new Uint8Array(SIZE).map((_, i) => (i * seed + 7) % 256)

/** A body that sends half, waits, then the rest: a PUT still streaming while another one arrives. */
function slowBody(bytes: Uint8Array, pauseMs: number): ReadableStream<Uint8Array> {
  return new ReadableStream({
    async start(controller) {
      controller.enqueue(bytes.slice(0, bytes.length / 2))
      await Bun.sleep(pauseMs)
      controller.enqueue(bytes.slice(bytes.length / 2))
      controller.close()
    },
  })
}

async function presign(srv: TestServer, t: Tenant) {
  const r = await call(srv.url, 'POST', '/v1/feedback/upload-url', { auth: t.pub, body: { contentType: 'image/png', byteSize: SIZE, kind: 'screenshot' } })
  expect(r.status).toBe(200)
  return r.body as { key: string; url: string; headers: Record<string, string> }
}

async function submitWith(srv: TestServer, t: Tenant, key: string) {
  const r = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'The chart is cut off', componentTarget: { name: 'Chart', screenshotKey: key } } })
  expect(r.status).toBe(201)
  return r.body.id as string
}

async function downloaded(srv: TestServer, t: Tenant, id: string): Promise<Uint8Array> {
  const item = await call(srv.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })
  const dl = await fetch(item.body.componentTarget.screenshotUrl)
  expect(dl.status).toBe(200)
  return new Uint8Array(await dl.arrayBuffer())
}

describe('embedded store', () => {
  let srv: TestServer
  let t: Tenant
  beforeAll(async () => {
    srv = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '100' })
    t = await seedTenant(srv.admin)
  })
  afterAll(() => srv.close())

  embeddedStoreOnly('two concurrent PUTs to one URL: one 200, the other 409 already_uploaded; the winner is stored', async () => {
    const up = await presign(srv, t)
    const a = bytesOf(3)
    const b = bytesOf(5)
    const first = fetch(up.url, { method: 'PUT', headers: { ...up.headers, 'content-length': String(SIZE) }, body: slowBody(a, 500) })
    await Bun.sleep(100)
    const second = fetch(up.url, { method: 'PUT', headers: up.headers, body: b })
    const replies = await Promise.all([first, second])
    // Normally the slow first one holds the key and the second is refused; on a loaded machine the order
    // may flip. Either way: exactly one lands, the other is 409, and the stored bytes are the winner's.
    expect(replies.map((r) => r.status).sort()).toEqual([200, 409])
    const loser = replies.find((r) => r.status === 409)!
    expect(((await loser.json()) as { error: { code: string } }).error.code).toBe('already_uploaded')
    const id = await submitWith(srv, t, up.key)
    expect(await downloaded(srv, t, id)).toEqual(replies[0].status === 200 ? a : b)
  })

  test('a report erased between a submission\'s check of its upload and its transaction: that submission is 400 invalid_body (upload again) and stores nothing', async () => {
    const up = await presign(srv, t)
    expect((await fetch(up.url, { method: 'PUT', headers: up.headers, body: bytesOf(7) })).status).toBe(200)
    const owner = await submitWith(srv, t, up.key)
    // The erasure commits just after the second submission checked the key (the window, made certain).
    const feedback = srv.ctx.store.feedback
    const submit = feedback.submit
    feedback.submit = async (...args) => {
      feedback.submit = submit
      expect(await srv.ctx.store.reporters.removeReports(t.orgId, [owner])).toEqual({ removed: 1, uploadKeys: [up.key] })
      return submit(...args)
    }
    try {
      const before = await call(srv.url, 'GET', '/v1/feedback?limit=100&includeDuplicates=true', { auth: t.key })
      const r = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'Same chart, again', componentTarget: { name: 'Chart', screenshotKey: up.key } } })
      expect(r.status).toBe(400)
      expect(r.body.error.code).toBe('invalid_body')
      expect(r.body.error.details.issues).toEqual([{ path: '/componentTarget/screenshotKey', message: expect.stringContaining('removed while the report was being filed') }])
      const after = await call(srv.url, 'GET', '/v1/feedback?limit=100&includeDuplicates=true', { auth: t.key })
      expect(after.body.data.length).toBe(before.body.data.length - 1) // the erased one gone, nothing added
    } finally {
      feedback.submit = submit
    }
    // Filed again now, the check itself finds the upload on its way out.
    const again = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'Same chart, a third time', componentTarget: { name: 'Chart', screenshotKey: up.key } } })
    expect(again.status).toBe(400)
    expect(again.body.error.details.issues).toEqual([{ path: '/componentTarget/screenshotKey', message: 'this upload was removed: upload the file again' }])
  })

  test('across processes (no shared memory): of two streams racing to one key, only the first to finish lands', async () => {
    const store = new EmbeddedBlobStore(tempDir('fixloop-race-'), new Uint8Array(32))
    await store.check()
    const key = `${'a'.repeat(24)}/${'b'.repeat(32)}`
    const [slow, fast] = await Promise.all([store.writeStream(key, slowBody(bytesOf(3), 300), SIZE, 'image/png'), store.writeStream(key, slowBody(bytesOf(5), 10), SIZE, 'image/png')])
    expect([slow, fast]).toEqual(['exists', 'ok'])
    expect(new Uint8Array(readFileSync(store.pathOf(key)))).toEqual(bytesOf(5))
  })

  embeddedStoreOnly('after a submission referenced it, another PUT is refused and the object is unchanged', async () => {
    const up = await presign(srv, t)
    expect((await fetch(up.url, { method: 'PUT', headers: up.headers, body: bytesOf(3) })).status).toBe(200)
    const id = await submitWith(srv, t, up.key)
    const again = await fetch(up.url, { method: 'PUT', headers: up.headers, body: bytesOf(9) })
    expect(again.status).toBe(409)
    expect(await downloaded(srv, t, id)).toEqual(bytesOf(3))
  })
})

describe('S3 store (s3rver on loopback)', () => {
  let s3: S3rver
  let srv: TestServer
  let t: Tenant
  beforeAll(async () => {
    s3 = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: tempDir('fixloop-s3-race-'), configureBuckets: [{ name: 'feedback', configs: [] }] })
    const port = (await s3.run()).port
    srv = await startTestServer({
      FIXLOOP_S3_ENDPOINT: `http://127.0.0.1:${port}`,
      FIXLOOP_S3_BUCKET: 'feedback',
      FIXLOOP_S3_ACCESS_KEY: 'S3RVER',
      FIXLOOP_S3_SECRET_KEY: 'S3RVER',
      FIXLOOP_RATE_LIMIT_MULTIPLIER: '100',
    })
    t = await seedTenant(srv.admin)
  })
  afterAll(async () => {
    await srv.close()
    await s3.close()
  })

  test('a PUT after the submission reaches the bucket, but the report keeps the object it was checked with', async () => {
    const up = await presign(srv, t)
    expect((await fetch(up.url, { method: 'PUT', headers: up.headers, body: bytesOf(3) })).status).toBe(200)
    const id = await submitWith(srv, t, up.key)
    // The presigned URL is still valid: S3 takes the new bytes under the original key.
    expect((await fetch(up.url, { method: 'PUT', headers: up.headers, body: bytesOf(9) })).status).toBe(200)
    expect(await downloaded(srv, t, id)).toEqual(bytesOf(3))
    // A second report referencing the same key gets the sealed object too, not the replacement.
    const second = await submitWith(srv, t, up.key)
    expect(await downloaded(srv, t, second)).toEqual(bytesOf(3))
  })
})
