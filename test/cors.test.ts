/**
 * CORS: only the widget routes are open to browsers. Real preflights (OPTIONS with Origin,
 * Access-Control-Request-Method and -Headers) and real cross-origin requests against a running server.
 * An App's allowedOrigins decides whether its actual requests get Access-Control-Allow-Origin; `sk_`
 * routes never get it.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { seedTenant, startTestServer, type Reply, type Tenant, type TestServer } from './harness'
import { ReplyLog, expectEnvelope, secretForms } from './helpers-auth'

const SHOP = 'https://shop.example'
const EVIL = 'https://evil.example'
const WIDGET_HEADERS = ['authorization', 'x-service-user-token', 'content-type', 'idempotency-key']
const BODY = { text: 'Cross-origin report' }

let srv: TestServer
/** Org whose only App (at first) is restricted to SHOP. */
let t: Tenant
let open: { id: string; publicKey: string } | undefined
let itemId: string
const log = new ReplyLog()

beforeAll(async () => {
  srv = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '100' })
  t = await seedTenant(srv.admin, { allowedOrigins: [SHOP] })
  const r = await log.call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, headers: { origin: SHOP }, body: BODY })
  expect(r.status).toBe(201)
  itemId = r.body.id
})

afterAll(async () => {
  log.expectNo5xx()
  log.expectRequestIds()
  log.expectNoLeak([t.key, ...secretForms(t.secret)])
  await srv.close()
})

function preflight(path: string, origin: string, method: string, headers = WIDGET_HEADERS.join(', ')): Promise<Reply> {
  return log.call(srv.url, 'OPTIONS', path, {
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers },
  })
}

const acao = (r: Reply) => r.headers.get('access-control-allow-origin')
/** Every CORS header of a reply (issue 10.8: an sk route sends none at all, not only no ACAO). */
const corsHeaders = (r: Reply) => [...r.headers.keys()].filter((k) => k.startsWith('access-control-'))

function expectPreflightAllowed(r: Reply, origin: string, method: string): void {
  expect(r.status).toBe(204)
  expect(acao(r)).toBe(origin)
  const allowedHeaders = (r.headers.get('access-control-allow-headers') ?? '').toLowerCase().split(/\s*,\s*/)
  for (const h of WIDGET_HEADERS) expect(allowedHeaders).toContain(h)
  const allowedMethods = (r.headers.get('access-control-allow-methods') ?? '').toUpperCase().split(/\s*,\s*/)
  expect(allowedMethods).toContain(method)
  // Keys are bearer credentials, never cookies: no credentialed CORS.
  expect(r.headers.get('access-control-allow-credentials')).not.toBe('true')
  // A wildcard would let any page read the reply regardless of the App's list.
  expect(acao(r)).not.toBe('*')
}

describe('preflight of the widget routes', () => {
  test('an origin some App accepts: 204 with ACAO = the origin and the widget headers', async () => {
    expectPreflightAllowed(await preflight('/v1/feedback', SHOP, 'POST'), SHOP, 'POST')
    expectPreflightAllowed(await preflight('/v1/feedback/upload-url', SHOP, 'POST'), SHOP, 'POST')
  })

  test('no preflight of this server allows an origin that no App accepts', async () => {
    const r = await preflight('/v1/feedback', EVIL, 'POST')
    expect(acao(r)).toBeNull()
    expect(r.status).toBeLessThan(500)
  })

  test('an App with an empty list opens the preflight to any origin, at once', async () => {
    open = await srv.admin.createApp(t.orgId, { name: 'Open' })
    expectPreflightAllowed(await preflight('/v1/feedback', EVIL, 'POST'), EVIL, 'POST')
    expectPreflightAllowed(await preflight('/v1/feedback', 'http://localhost:5173', 'POST'), 'http://localhost:5173', 'POST')
  })
})

describe('actual widget requests', () => {
  test('restricted App: the allowed origin gets ACAO; another origin is 403 with no ACAO', async () => {
    const ok = await log.call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, headers: { origin: SHOP }, body: BODY })
    expect(ok.status).toBe(201)
    expect(acao(ok)).toBe(SHOP)
    const vary = (ok.headers.get('vary') ?? '').toLowerCase()
    expect(vary).toContain('origin')

    const bad = await log.call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, headers: { origin: EVIL }, body: BODY })
    expect(bad.status).toBe(403)
    expectEnvelope(bad, 'origin_not_allowed')
    expect(acao(bad)).toBeNull()
  })

  test('restricted App: an error reply to the allowed origin is readable (ACAO on 400)', async () => {
    const r = await log.call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, headers: { origin: SHOP }, body: { text: '' } })
    expect(r.status).toBe(400)
    expectEnvelope(r, 'invalid_body')
    expect(acao(r)).toBe(SHOP)
  })

  test('restricted App: the other origin gets no ACAO even when another App of the server is open', async () => {
    expect(open).toBeDefined()
    const r = await log.call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, headers: { origin: EVIL }, body: BODY })
    expect(r.status).toBe(403)
    expect(acao(r)).toBeNull()
  })

  test('open App (empty list): any origin is accepted and gets ACAO', async () => {
    for (const origin of [EVIL, SHOP, 'http://localhost:5173']) {
      const r = await log.call(srv.url, 'POST', '/v1/feedback', { auth: open!.publicKey, headers: { origin }, body: BODY })
      expect({ origin, status: r.status, acao: acao(r) }).toEqual({ origin, status: 201, acao: origin })
    }
  })

  test('a request with a bad key gets no ACAO', async () => {
    for (const auth of ['pub_' + '0'.repeat(32), t.key]) {
      const r = await log.call(srv.url, 'POST', '/v1/feedback', { auth, headers: { origin: SHOP }, body: BODY })
      expect(r.status).toBe(401)
      expect(acao(r)).toBeNull()
    }
  })

  test('upload-url from the allowed origin carries ACAO; from another origin it is refused', async () => {
    const body = { contentType: 'image/png', byteSize: 4, kind: 'screenshot' }
    const ok = await log.call(srv.url, 'POST', '/v1/feedback/upload-url', { auth: t.pub, headers: { origin: SHOP }, body })
    if (ok.status === 404) return // endpoint not mounted in this build
    expect(ok.status).toBe(200)
    expect(acao(ok)).toBe(SHOP)
    const bad = await log.call(srv.url, 'POST', '/v1/feedback/upload-url', { auth: t.pub, headers: { origin: EVIL }, body })
    expect(bad.status).toBe(403)
    expectEnvelope(bad, 'origin_not_allowed')
    expect(acao(bad)).toBeNull()
  })
})

describe('sk routes are never open to browsers', () => {
  test('actual requests with an Origin get no Access-Control-Allow-Origin', async () => {
    const requests: { method: string; path: string; body?: unknown }[] = [
      { method: 'GET', path: '/v1/apps' },
      { method: 'GET', path: '/v1/feedback' },
      { method: 'GET', path: `/v1/feedback/${itemId}` },
      { method: 'PATCH', path: `/v1/feedback/${itemId}`, body: { status: 'archived' } },
      { method: 'POST', path: `/v1/tokens/mint?appId=${t.appId}`, body: { sub: 'u' } },
    ]
    for (const origin of [SHOP, EVIL]) {
      for (const req of requests) {
        const r = await log.call(srv.url, req.method, req.path, { auth: t.key, headers: { origin }, body: req.body })
        expect(r.status).toBeLessThan(500)
        expect({ origin, route: `${req.method} ${req.path}`, cors: corsHeaders(r) }).toEqual({ origin, route: `${req.method} ${req.path}`, cors: [] })
      }
    }
  })

  test('preflights for sk methods and paths get no Access-Control-Allow-Origin', async () => {
    const rows: [string, string][] = [
      ['/v1/feedback', 'GET'],
      [`/v1/feedback/${itemId}`, 'GET'],
      [`/v1/feedback/${itemId}`, 'PATCH'],
      ['/v1/apps', 'GET'],
      ['/v1/tokens/mint', 'POST'],
      [`/v1/tokens/mint?appId=${t.appId}`, 'POST'],
      ['/v1/feedback', 'DELETE'],
    ]
    for (const origin of [SHOP, EVIL]) {
      for (const [path, method] of rows) {
        const r = await preflight(path, origin, method)
        expect(r.status).toBeLessThan(500)
        expect({ origin, path, method, cors: corsHeaders(r) }).toEqual({ origin, path, method, cors: [] })
      }
    }
  })

  test('health, docs and an sk route without an Origin send no CORS header either', async () => {
    for (const path of ['/healthz', '/openapi.json', '/v1/apps']) {
      const r = await log.call(srv.url, 'GET', path, { auth: t.key })
      expect({ path, cors: corsHeaders(r) }).toEqual({ path, cors: [] })
    }
  })

  test('the widget routes still expose X-Request-Id to the allowed origin', async () => {
    const r = await log.call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, headers: { origin: SHOP }, body: BODY })
    expect(r.status).toBe(201)
    expect(r.headers.get('access-control-expose-headers')).toContain('X-Request-Id')
  })

  test('the sk_ key never appears in a CORS reply', () => {
    for (const { reply } of log.replies) expect(reply.text).not.toContain(t.key)
  })
})
