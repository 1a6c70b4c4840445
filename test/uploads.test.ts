/**
 * Screenshots and attachments (spec 4.2, CONTRACT "Upload URL"): the whole flow upload-url → PUT →
 * submit → GET → download, on the embedded store and on a real S3-protocol server (s3rver), plus
 * every refusal.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import S3rver from 's3rver'
import aws4 from 'aws4'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { call, runBinary, seedTenant, startTestServer, tempDir, type Tenant, type TestServer } from './harness'
import { ManualClock } from '../src/core/clock'
import { S3BlobStore } from '../src/blobs/s3-store'
import { dbRow } from './sqlite-of'
import { TEST_DIALECT } from './cluster-env'

/**
 * PostgreSQL mode keeps every blob in S3 (the harness gives each server the file's s3rver): the server has
 * no embedded store there, so the tests of the embedded store's own PUT route and files run in SQLite mode only.
 */
const embeddedStoreOnly = test.skipIf(TEST_DIALECT === 'pg')

const PNG = new Uint8Array(2048).map((_, i) => (i * 31) % 256)

async function presign(srv: TestServer, t: Tenant, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  return call(srv.url, 'POST', '/v1/feedback/upload-url', { auth: t.pub, body, headers })
}

async function put(url: string, headers: Record<string, string>, bytes: Uint8Array) {
  const r = await fetch(url, { method: 'PUT', headers, body: bytes })
  return { status: r.status, body: (await r.text()) || undefined }
}

/** The full flow, the same on both stores. */
async function roundTrip(srv: TestServer, t: Tenant, filename = 'shot.png') {
  const up = await presign(srv, t, { contentType: 'image/png', byteSize: PNG.length, kind: 'screenshot', filename })
  expect(up.status).toBe(200)
  expect(up.body.method).toBe('PUT')
  expect(up.body.headers['Content-Type']).toBe('image/png')
  expect(new Date(up.body.expiresAt).getTime()).toBeGreaterThan(Date.now())
  expect(up.body.key.startsWith(t.appId + '/')).toBe(true)
  const p = await put(up.body.url, up.body.headers, PNG)
  expect(p.status).toBe(200)
  const sub = await call(srv.url, 'POST', '/v1/feedback', {
    auth: t.pub,
    body: {
      text: 'The chart is cut off',
      attachments: [{ key: up.body.key, kind: 'screenshot', contentType: 'image/png', byteSize: PNG.length, width: 32, height: 16 }],
      componentTarget: { name: 'RevenueChart', screenshotKey: up.body.key },
    },
  })
  expect(sub.status).toBe(201)
  const item = await call(srv.url, 'GET', `/v1/feedback/${sub.body.id}`, { auth: t.key })
  expect(item.status).toBe(200)
  const att = item.body.attachments[0]
  expect(att.key).toBe(up.body.key)
  expect(typeof att.url).toBe('string')
  expect(typeof item.body.componentTarget.screenshotUrl).toBe('string')
  const dl = await fetch(att.url)
  expect(dl.status).toBe(200)
  expect(new Uint8Array(await dl.arrayBuffer())).toEqual(PNG)
  return { key: up.body.key, download: dl, feedbackId: sub.body.id }
}

describe('embedded store', () => {
  let srv: TestServer
  let t: Tenant
  let other: Tenant
  beforeAll(async () => {
    srv = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '1' })
    t = await seedTenant(srv.admin)
    other = await seedTenant(srv.admin, {}, 'Other')
  })
  afterAll(() => srv.close())

  embeddedStoreOnly('upload-url → PUT → submit → GET → download returns the same bytes, served safely', async () => {
    const { key, download } = await roundTrip(srv, t)
    expect(download.headers.get('x-content-type-options')).toBe('nosniff')
    expect(download.headers.get('content-disposition')).toBe('attachment; filename="shot.png"')
    expect(download.headers.get('content-type')).toBe('image/png')
    expect(existsSync(join(srv.dataDir, 'blobs', key))).toBe(true)
  })

  embeddedStoreOnly("a download is saved with its type's extension, whatever the uploader named it", async () => {
    // Named by the uploader as a page or a program, declared and stored as image/png: saved as a .png.
    for (const [given, saved] of [
      ['checkout.html', 'checkout.png'],
      ['invoice.pdf.exe', 'invoice.pdf.png'],
      ['screenshot', 'screenshot.png'],
      ['Shot.PNG', 'Shot.PNG'],
    ]) {
      const { download } = await roundTrip(srv, t, given)
      expect(download.headers.get('content-disposition')).toBe(`attachment; filename="${saved}"`)
    }
  })

  embeddedStoreOnly('the upload URL points at the server itself', async () => {
    const up = await presign(srv, t, { contentType: 'text/plain', byteSize: 5, kind: 'attachment' })
    expect(up.body.url.startsWith(srv.url + '/v1/uploads/')).toBe(true)
  })

  const refusals: [string, Record<string, unknown>, number, string][] = [
    ['HTML is refused', { contentType: 'text/html', byteSize: 10, kind: 'attachment' }, 400, 'invalid_body'],
    ['SVG is refused', { contentType: 'image/svg+xml', byteSize: 10, kind: 'screenshot' }, 400, 'invalid_body'],
    ['JavaScript is refused', { contentType: 'application/javascript', byteSize: 10, kind: 'attachment' }, 400, 'invalid_body'],
    ['over 15 MB is 413', { contentType: 'image/png', byteSize: 15 * 1024 * 1024 + 1, kind: 'screenshot' }, 413, 'payload_too_large'],
    ['zero bytes is refused', { contentType: 'image/png', byteSize: 0, kind: 'screenshot' }, 400, 'invalid_body'],
    ['unknown kind is refused', { contentType: 'image/png', byteSize: 10, kind: 'video' }, 400, 'invalid_body'],
    ['unknown field is refused', { contentType: 'image/png', byteSize: 10, kind: 'screenshot', acl: 'public' }, 400, 'invalid_body'],
  ]
  for (const [name, body, status, code] of refusals) {
    test(`upload-url: ${name}`, async () => {
      const r = await presign(srv, t, body)
      expect(r.status).toBe(status)
      expect(r.body.error.code).toBe(code)
    })
  }

  test('exactly 15 MB is accepted', async () => {
    const r = await presign(srv, t, { contentType: 'video/webm', byteSize: 15 * 1024 * 1024, kind: 'attachment' })
    expect(r.status).toBe(200)
  })

  test('upload-url needs the widget credentials', async () => {
    expect((await call(srv.url, 'POST', '/v1/feedback/upload-url', { body: { contentType: 'image/png', byteSize: 1, kind: 'screenshot' } })).body.error.code).toBe('missing_authorization')
    expect((await call(srv.url, 'POST', '/v1/feedback/upload-url', { auth: t.key, body: { contentType: 'image/png', byteSize: 1, kind: 'screenshot' } })).body.error.code).toBe('invalid_authorization')
  })

  describe.skipIf(TEST_DIALECT === 'pg')('PUT refusals', () => {
    test('wrong signature', async () => {
      const up = await presign(srv, t, { contentType: 'image/png', byteSize: PNG.length, kind: 'screenshot' })
      const url = up.body.url.replace(/sig=[^&]+/, 'sig=AAAA' + up.body.url.split('sig=')[1].slice(4))
      const r = await put(url, up.body.headers, PNG)
      expect(r.status).toBe(403)
      expect(JSON.parse(r.body!).error.code).toBe('invalid_signature')
    })
    test('a stretched expiry breaks the signature', async () => {
      const up = await presign(srv, t, { contentType: 'image/png', byteSize: PNG.length, kind: 'screenshot' })
      const r = await put(up.body.url.replace(/expires=(\d+)/, (_: string, e: string) => `expires=${Number(e) + 3600}`), up.body.headers, PNG)
      expect(JSON.parse(r.body!).error.code).toBe('invalid_signature')
    })
    test('wrong size: fewer and more bytes than announced', async () => {
      const up = await presign(srv, t, { contentType: 'image/png', byteSize: PNG.length, kind: 'screenshot' })
      expect((await put(up.body.url, up.body.headers, PNG.slice(1))).status).toBe(400)
      expect((await put(up.body.url, up.body.headers, new Uint8Array(PNG.length + 1))).status).toBe(400)
      // Nothing half-written is left behind, and the right bytes can still be sent.
      expect(existsSync(join(srv.dataDir, 'blobs', up.body.key))).toBe(false)
      expect((await put(up.body.url, up.body.headers, PNG)).status).toBe(200)
    })
    test('a streamed body larger than announced is cut off while streaming', async () => {
      const up = await presign(srv, t, { contentType: 'image/png', byteSize: 1024, kind: 'screenshot' })
      let chunks = 64
      const stream = new ReadableStream<Uint8Array>({
        pull(c) {
          c.enqueue(new Uint8Array(64 * 1024))
          if (--chunks <= 0) c.close()
        },
      })
      const r = await fetch(up.body.url, { method: 'PUT', headers: up.body.headers, body: stream, duplex: 'half' } as RequestInit)
      expect(r.status).toBe(400)
      expect(existsSync(join(srv.dataDir, 'blobs', up.body.key))).toBe(false)
    })
    test('wrong content type', async () => {
      const up = await presign(srv, t, { contentType: 'image/png', byteSize: PNG.length, kind: 'screenshot' })
      const r = await put(up.body.url, { 'Content-Type': 'text/html' }, PNG)
      expect(r.status).toBe(400)
    })
    test('a second PUT to the same key is refused', async () => {
      const up = await presign(srv, t, { contentType: 'image/png', byteSize: PNG.length, kind: 'screenshot' })
      expect((await put(up.body.url, up.body.headers, PNG)).status).toBe(200)
      const again = await put(up.body.url, up.body.headers, PNG)
      expect(again.status).toBe(409)
      expect(JSON.parse(again.body!).error.code).toBe('already_uploaded')
    })
    test('path traversal is impossible', async () => {
      for (const path of ['/v1/uploads/..%2F..%2Ffixloop.db/x', `/v1/uploads/${t.appId}/..%2F..%2Fmaster.key`, `/v1/uploads/${t.appId}/abc`]) {
        const r = await fetch(srv.url + path + '?expires=9999999999&sig=x', { method: 'PUT', headers: { 'content-type': 'image/png' }, body: PNG })
        expect([400, 403, 404]).toContain(r.status)
        const g = await fetch(srv.url + path + '?expires=9999999999&sig=x')
        expect([400, 403, 404]).toContain(g.status)
        expect(await g.text()).not.toContain('PRIVATE')
      }
    })
  })

  embeddedStoreOnly('an expired URL is refused', async () => {
    const clock = new ManualClock()
    const s2 = await startTestServer({}, { clock })
    try {
      const t2 = await seedTenant(s2.admin)
      const up = await call(s2.url, 'POST', '/v1/feedback/upload-url', { auth: t2.pub, body: { contentType: 'image/png', byteSize: PNG.length, kind: 'screenshot' } })
      clock.advance(16 * 60 * 1000)
      const r = await put(up.body.url, up.body.headers, PNG)
      expect(r.status).toBe(403)
      expect(JSON.parse(r.body!).error.code).toBe('url_expired')
    } finally {
      await s2.close()
    }
  })

  describe('submission refusals', () => {
    async function submitWith(tenant: Tenant, key: string, extra: Record<string, unknown> = {}) {
      return call(srv.url, 'POST', '/v1/feedback', {
        auth: tenant.pub,
        body: { text: 'see attachment', attachments: [{ key, kind: 'screenshot', contentType: 'image/png', byteSize: PNG.length, ...extra }] },
      })
    }
    test('a key of another App', async () => {
      const up = await presign(srv, other, { contentType: 'image/png', byteSize: PNG.length, kind: 'screenshot' })
      await put(up.body.url, up.body.headers, PNG)
      const r = await submitWith(t, up.body.key)
      expect(r.status).toBe(400)
      expect(r.body.error.code).toBe('invalid_body')
      expect(r.body.error.details.issues[0].path).toBe('/attachments/0/key')
    })
    test('a key never issued', async () => {
      const r = await submitWith(t, `${t.appId}/${'ab'.repeat(16)}`)
      expect(r.body.error.code).toBe('invalid_body')
    })
    test('a key issued but never uploaded', async () => {
      const up = await presign(srv, t, { contentType: 'image/png', byteSize: PNG.length, kind: 'screenshot' })
      const r = await submitWith(t, up.body.key)
      expect(r.status).toBe(400)
      expect(r.body.error.details.issues[0].message).toContain('nothing was uploaded')
    })
    test('a screenshotKey never uploaded', async () => {
      const up = await presign(srv, t, { contentType: 'image/png', byteSize: PNG.length, kind: 'screenshot' })
      const r = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'x', componentTarget: { name: 'Nav', screenshotKey: up.body.key } } })
      expect(r.status).toBe(400)
      expect(r.body.error.details.issues[0].path).toBe('/componentTarget/screenshotKey')
    })
    test('declared size or type that does not match the object', async () => {
      const up = await presign(srv, t, { contentType: 'image/png', byteSize: PNG.length, kind: 'screenshot' })
      await put(up.body.url, up.body.headers, PNG)
      expect((await submitWith(t, up.body.key, { byteSize: PNG.length + 1 })).status).toBe(400)
      expect((await submitWith(t, up.body.key, { contentType: 'image/jpeg' })).status).toBe(400)
      expect((await submitWith(t, up.body.key)).status).toBe(201)
    })
    test('an attachment declared over 15 MB is 413', async () => {
      const r = await submitWith(t, `${t.appId}/${'ab'.repeat(16)}`, { byteSize: 15 * 1024 * 1024 + 1 })
      expect(r.status).toBe(413)
      expect(r.body.error.code).toBe('payload_too_large')
    })
  })

  test('upload-url rate limit: 120/min public', async () => {
    const s2 = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '0.025' }) // 3 per bucket
    try {
      const t2 = await seedTenant(s2.admin)
      const statuses: number[] = []
      let last
      for (let i = 0; i < 4; i++) {
        last = await call(s2.url, 'POST', '/v1/feedback/upload-url', { auth: t2.pub, body: { contentType: 'image/png', byteSize: 10, kind: 'screenshot' } })
        statuses.push(last.status)
      }
      expect(statuses).toEqual([200, 200, 200, 429])
      expect(Number(last!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    } finally {
      await s2.close()
    }
  })
})

describe('unreferenced uploads are collected after the grace period', () => {
  embeddedStoreOnly('only never-referenced objects older than the grace period are removed', async () => {
    const clock = new ManualClock()
    const srv = await startTestServer({ FIXLOOP_UPLOAD_GRACE_HOURS: '1' }, { clock, worker: { autoStart: false } })
    try {
      const t = await seedTenant(srv.admin)
      const keep = await presign(srv, t, { contentType: 'image/png', byteSize: PNG.length, kind: 'screenshot' })
      await put(keep.body.url, keep.body.headers, PNG)
      const sub = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'x', attachments: [{ key: keep.body.key, kind: 'screenshot', contentType: 'image/png', byteSize: PNG.length }] } })
      expect(sub.status).toBe(201)
      const orphan = await presign(srv, t, { contentType: 'image/png', byteSize: PNG.length, kind: 'screenshot' })
      await put(orphan.body.url, orphan.body.headers, PNG)
      const fresh = () => existsSync(join(srv.dataDir, 'blobs', orphan.body.key))
      await srv.worker.tick()
      expect(fresh()).toBe(true) // within the grace period
      clock.advance(2 * 3600 * 1000)
      await srv.worker.tick()
      expect(fresh()).toBe(false)
      expect(existsSync(join(srv.dataDir, 'blobs', keep.body.key))).toBe(true)
      const item = await call(srv.url, 'GET', `/v1/feedback/${sub.body.id}`, { auth: t.key })
      expect((await fetch(item.body.attachments[0].url)).status).toBe(200)
      expect(await dbRow(srv.ctx, 'SELECT COUNT(*) AS n FROM uploads')).toEqual({ n: 1 })
    } finally {
      await srv.close()
    }
  })
})

describe('S3 store (s3rver on loopback)', () => {
  let s3: S3rver
  let s3Port: number
  let srv: TestServer
  let t: Tenant
  const s3Dir = tempDir('fixloop-s3-')
  beforeAll(async () => {
    s3 = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: s3Dir, configureBuckets: [{ name: 'feedback', configs: [] }] })
    s3Port = (await s3.run()).port
    srv = await startTestServer({
      FIXLOOP_S3_ENDPOINT: `http://127.0.0.1:${s3Port}`,
      FIXLOOP_S3_BUCKET: 'feedback',
      FIXLOOP_S3_ACCESS_KEY: 'S3RVER',
      FIXLOOP_S3_SECRET_KEY: 'S3RVER',
    })
    t = await seedTenant(srv.admin)
  })
  afterAll(async () => {
    await srv.close()
    await s3.close()
  })

  test('the same flow presigns against the bucket and downloads the same bytes', async () => {
    const up = await presign(srv, t, { contentType: 'image/png', byteSize: PNG.length, kind: 'screenshot' })
    expect(up.body.url.startsWith(`http://127.0.0.1:${s3Port}/feedback/`)).toBe(true)
    const { key } = await roundTrip(srv, t)
    expect(readdirSync(join(s3Dir, 'feedback', t.appId)).length).toBeGreaterThan(0)
    expect(key.startsWith(t.appId)).toBe(true)
  })

  test("presigned URLs live their lifetime on the service's clock, whatever the wall clock says (a manual clock months behind)", async () => {
    const clock = new ManualClock(Date.UTC(2020, 0, 1))
    const store = new S3BlobStore({ endpoint: `http://127.0.0.1:${s3Port}`, bucket: 'feedback', accessKey: 'S3RVER', secretKey: 'S3RVER', region: 'us-east-1' }, clock)
    const lifetime = (url: string) => Number(new URL(url).searchParams.get('X-Amz-Expires'))
    const key = `${t.appId}/${'c'.repeat(32)}`
    const put = await store.presignPut(key, 'image/png', PNG.length, clock.now() + 15 * 60_000, srv.url)
    expect(lifetime(put.url)).toBe(900)
    expect((await fetch(put.url, { method: 'PUT', headers: put.headers, body: PNG })).status).toBe(200)
    const get = await store.presignGet(key, 'image/png', 'shot.png', clock.now() + 5 * 60_000, srv.url)
    expect(lifetime(get)).toBe(300)
    // Two seconds on: a URL given one second (the wall clock's reading of a manual clock's time) would be refused.
    await Bun.sleep(2_000)
    expect(new Uint8Array(await (await fetch(get)).arrayBuffer())).toEqual(PNG)
  })

  test('a presigned PUT is signed for exactly the announced length: SigV4 recomputed independently (aws4) matches for it, not for another', async () => {
    // s3rver checks no signature, so the URL is checked here the way S3 and MinIO check it: a PUT of
    // another length has another canonical request, so its signature is not the URL's (403 there).
    const up = await presign(srv, t, { contentType: 'image/png', byteSize: PNG.length, kind: 'screenshot' })
    expect(up.status).toBe(200)
    const url = new URL(up.body.url)
    const q = url.searchParams
    expect(q.get('X-Amz-SignedHeaders')).toBe('content-length;host')
    const date = q.get('X-Amz-Date')!
    expect(q.get('X-Amz-Credential')).toBe(`S3RVER/${date.slice(0, 8)}/us-east-1/s3/aws4_request`)
    const signatureFor = (length: number) => {
      const signed = aws4.sign(
        {
          host: url.host,
          path: `${url.pathname}?X-Amz-Date=${date}&X-Amz-Expires=${q.get('X-Amz-Expires')}`,
          method: 'PUT',
          service: 's3',
          region: 'us-east-1',
          signQuery: true,
          headers: { Host: url.host, 'Content-Length': String(length) },
        },
        { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
      )
      return new URL(signed.path, url).searchParams.get('X-Amz-Signature')
    }
    expect(signatureFor(PNG.length)).toBe(q.get('X-Amz-Signature'))
    expect(signatureFor(1)).not.toBe(q.get('X-Amz-Signature'))
    expect(signatureFor(PNG.length + 1)).not.toBe(q.get('X-Amz-Signature'))
    // The announced length, sent as any client sends it (Content-Length from the body), still lands.
    expect((await put(up.body.url, up.body.headers, PNG)).status).toBe(200)
  })

  test('an object larger than announced is refused on submission', async () => {
    const up = await presign(srv, t, { contentType: 'image/png', byteSize: 100, kind: 'screenshot' })
    // s3rver verifies no signature, so it takes a PUT of another length that S3 and MinIO refuse (the
    // test above): the check when the key is used still holds on its own.
    expect((await put(up.body.url, up.body.headers, PNG)).status).toBe(200)
    const r = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'x', componentTarget: { name: 'A', screenshotKey: up.body.key } } })
    expect(r.status).toBe(400)
    expect(r.body.error.details.issues[0].message).toContain('announced')
  })

  test('serve refuses to start on a missing bucket or wrong credentials, with a clear error', async () => {
    const dataDir = tempDir()
    const base = { FIXLOOP_S3_ENDPOINT: `http://127.0.0.1:${s3Port}`, FIXLOOP_S3_ACCESS_KEY: 'S3RVER', FIXLOOP_S3_SECRET_KEY: 'S3RVER' }
    const missing = await runBinary(['serve', '--port', '0', '--data-dir', dataDir], { ...base, FIXLOOP_S3_BUCKET: 'nope' })
    expect(missing.code).not.toBe(0)
    expect(missing.stderr).toContain('bucket "nope" does not exist')
    // It says how to create it, not "see README" (which does not).
    expect(missing.stderr).toContain('s3 mb s3://nope')
    const wrong = await runBinary(['serve', '--port', '0', '--data-dir', dataDir], { ...base, FIXLOOP_S3_BUCKET: 'feedback', FIXLOOP_S3_ACCESS_KEY: 'WRONG' })
    expect(wrong.code).not.toBe(0)
    expect(wrong.stderr).toContain('cannot reach bucket "feedback"')
    expect(wrong.stderr).toContain('FIXLOOP_S3_ACCESS_KEY')
    const partial = await runBinary(['serve', '--port', '0', '--data-dir', dataDir], { FIXLOOP_S3_BUCKET: 'feedback' })
    expect(partial.code).not.toBe(0)
    expect(partial.stderr).toContain('FIXLOOP_S3_ENDPOINT')
  })
})

describe('the upload budget: a public key cannot fill the disk the database lives on', () => {
  test("an App's unreferenced uploads of the last hour stop at FIXLOOP_UPLOAD_APP_HOURLY_MB (429 with Retry-After); a submission referencing its uploads frees them", async () => {
    const srv = await startTestServer({ FIXLOOP_UPLOAD_APP_HOURLY_MB: '0.01', FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
    try {
      const t = await seedTenant(srv.admin, {}, 'Budget')
      const other = await seedTenant(srv.admin, {}, 'Neighbour')
      const size = 4000 // 10 KiB budget: two fit, the third does not
      const bytes = new Uint8Array(size).fill(7)
      const first = await presign(srv, t, { contentType: 'image/png', byteSize: size, kind: 'screenshot' })
      const second = await presign(srv, t, { contentType: 'image/png', byteSize: size, kind: 'screenshot' })
      expect([first.status, second.status]).toEqual([200, 200])
      const third = await presign(srv, t, { contentType: 'image/png', byteSize: size, kind: 'screenshot' })
      expect(third.status).toBe(429)
      expect(third.body.error.code).toBe('rate_limited')
      expect(Number(third.headers.get('retry-after'))).toBeGreaterThan(0)
      expect(JSON.stringify(third.body.error.details)).toContain('FIXLOOP_UPLOAD_APP_HOURLY_MB')
      // Another App has a budget of its own.
      expect((await presign(srv, other, { contentType: 'image/png', byteSize: size, kind: 'screenshot' })).status).toBe(200)
      // The first one uploaded and referenced by a report: its bytes no longer count.
      expect((await put(first.body.url, first.body.headers, bytes)).status).toBe(200)
      const sub = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'Budgeted report', attachments: [{ key: first.body.key, kind: 'screenshot', contentType: 'image/png', byteSize: size }] } })
      expect(sub.status).toBe(201)
      expect((await presign(srv, t, { contentType: 'image/png', byteSize: size, kind: 'screenshot' })).status).toBe(200)
    } finally {
      await srv.close()
    }
  })

  embeddedStoreOnly('the embedded store pauses uploads (503 internal_error, Retry-After) when the disk would keep less than FIXLOOP_UPLOAD_MIN_FREE_MB; reports are still taken', async () => {
    // More than any test machine has free: every upload would pass the floor.
    const srv = await startTestServer({ FIXLOOP_UPLOAD_MIN_FREE_MB: '1000000000', FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
    try {
      const t = await seedTenant(srv.admin, {}, 'Full disk')
      const r = await presign(srv, t, { contentType: 'image/png', byteSize: 10, kind: 'screenshot' })
      expect(r.status).toBe(503)
      // Spec part 7: a 5xx is internal_error (with the request id); the message and reason say why.
      expect(r.body.error.code).toBe('internal_error')
      expect(r.body.error.details.requestId).toBe(r.headers.get('x-request-id'))
      expect(r.body.error.message).toContain('disk is nearly full')
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0)
      expect((await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'Still taken' } })).status).toBe(201)
    } finally {
      await srv.close()
    }
  })

  test('the settings: megabytes, 0 turns a check off, anything else stops the start', async () => {
    const { loadConfig, ConfigError } = await import('../src/config')
    const dataDir = tempDir('fixloop-budget-')
    expect(loadConfig({ dataDir }, {})).toMatchObject({ uploadAppHourlyBytes: 1024 * 1024 * 1024, uploadMinFreeBytes: 256 * 1024 * 1024 })
    expect(loadConfig({ dataDir }, { FIXLOOP_UPLOAD_APP_HOURLY_MB: '0', FIXLOOP_UPLOAD_MIN_FREE_MB: '0' })).toMatchObject({ uploadAppHourlyBytes: 0, uploadMinFreeBytes: 0 })
    expect(loadConfig({ dataDir }, { FIXLOOP_UPLOAD_APP_HOURLY_MB: '2' }).uploadAppHourlyBytes).toBe(2 * 1024 * 1024)
    for (const bad of ['-1', 'lots', 'NaN']) {
      expect(() => loadConfig({ dataDir }, { FIXLOOP_UPLOAD_APP_HOURLY_MB: bad })).toThrow(ConfigError)
      expect(() => loadConfig({ dataDir }, { FIXLOOP_UPLOAD_MIN_FREE_MB: bad })).toThrow(ConfigError)
    }
  })
})
