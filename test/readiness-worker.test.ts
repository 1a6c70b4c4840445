/**
 * The worker and checkpointer probes behind /readyz: a worker holding one job past its lease is "stuck",
 * a stopped worker is not alive; a running checkpointer thread reports in. Real database, real jobs.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { storeOf } from './dialects'
import { sqliteStorage } from '../src/db/sqlite/storage'
import { systemClock } from '../src/core/clock'
import { Logger } from '../src/core/logger'
import { Worker, type JobStep } from '../src/worker/loop'
import { call, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { deferred, submit, waitFor } from './helpers-lifecycle'
import { sqliteOf } from './sqlite-of'

let srv: TestServer
let t: Tenant
beforeAll(async () => {
  // The server's own worker stays off: the worker under test is the only one claiming jobs.
  srv = await startTestServer({}, { worker: { autoStart: false } })
  t = await seedTenant(srv.admin)
})
afterAll(() => srv.close())

test('a worker holding one job longer than its lease is reported stuck; done, it is healthy again', async () => {
  const gate = deferred()
  let entered = false
  const step: JobStep = {
    async run() {
      entered = true
      await gate.promise
    },
  }
  const w = new Worker(storeOf(sqliteStorage(sqliteOf(srv.ctx))).jobs(), { process: step }, systemClock, new Logger('silent'), { leaseMs: 300, pollMs: 50 })
  expect(w.health()).toMatchObject({ ok: false, reason: expect.stringContaining('not running') })
  w.start()
  expect(w.health().ok).toBe(true)
  expect((await submit(srv.url, t.pub, { text: 'hold me' })).status).toBe(201)
  await waitFor(() => entered, 5000)
  expect(w.health().ok).toBe(true)
  await Bun.sleep(400)
  const stuck = w.health()
  expect(stuck.ok).toBe(false)
  expect(stuck.reason).toContain('stuck')
  gate.resolve()
  await waitFor(() => w.health().ok, 5000)
  await w.stop()
  expect(w.health().ok).toBe(false)
})

test('/readyz lists every check as ok on a healthy server', async () => {
  const r = await call(srv.url, 'GET', '/readyz')
  expect(r.status).toBe(200)
  expect(r.body.checks.checkpointer).toEqual({ ok: true })
  expect(r.body.checks.database).toEqual({ ok: true })
  expect(r.body.checks.masterKey).toEqual({ ok: true })
})
