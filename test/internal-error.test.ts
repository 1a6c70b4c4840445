/**
 * An unexpected failure is 500 internal_error with details.requestId (= the X-Request-Id header); the
 * cause is logged with its stack and never sent to the client.
 */
import { expect, test } from 'bun:test'
import { call, seedTenant, startTestServer } from './harness'
import { Logger } from '../src/core/logger'
import { dbRun } from './sqlite-of'

test('unexpected errors: 500 internal_error with the request id, cause logged not sent', async () => {
  const lines: string[] = []
  const srv = await startTestServer({}, { log: new Logger('info', (l) => lines.push(l)) })
  try {
    const t = await seedTenant(srv.admin)
    // Break the storage under a route: the idempotency table disappears.
    await dbRun(srv.ctx, 'DROP TABLE idempotency_keys')
    const r = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'x' }, headers: { 'idempotency-key': 'k1' } })
    expect(r.status).toBe(500)
    expect(r.body.error.code).toBe('internal_error')
    const requestId = r.headers.get('x-request-id')
    expect(requestId).toBeTruthy()
    expect(r.body.error.details).toEqual({ requestId })
    expect(r.text).not.toContain('idempotency_keys')
    expect(r.text).not.toContain('at ')
    await Bun.sleep(20)
    const logged = lines.join('\n')
    expect(logged).toContain('unhandled error')
    expect(logged).toContain(requestId!)
    expect(logged).toContain('idempotency_keys')
    // The server keeps serving.
    expect((await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'still fine' } })).status).toBe(201)
  } finally {
    await srv.close()
  }
})
