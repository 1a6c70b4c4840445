/**
 * The explicit wake signal: every job the lifecycle queues wakes this process's worker at once. With
 * the worker's poll pushed out to a minute, a report still goes from received to awaiting_manual (and
 * an unmerged report is resumed) within moments: only the signal can have started those runs.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { call, eventually, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'

let srv: TestServer
let t: Tenant

beforeAll(async () => {
  srv = await startTestServer({}, { worker: { pollMs: 60_000 } })
  t = seedTenant(srv.admin)
})
afterAll(() => srv.close())

const statusOf = async (id: string) => (await call(srv.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })).body.status

test('a submission wakes the worker: processed long before the next poll', async () => {
  // Let the worker finish its start-up tick and go to sleep on its one-minute poll.
  await Bun.sleep(100)
  const started = Date.now()
  const r = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'The print button opens an empty tab' } })
  expect(r.status).toBe(201)
  await eventually(async () => (await statusOf(r.body.id)) === 'awaiting_manual', 5_000)
  expect(Date.now() - started).toBeLessThan(5_000)
})

test('a customer move to queued wakes it too: the agent job runs at once (no repository: it waits with a reason)', async () => {
  const r = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'Search results ignore the selected language' } })
  await eventually(async () => (await statusOf(r.body.id)) === 'awaiting_manual', 5_000)
  await Bun.sleep(100)
  expect((await call(srv.url, 'PATCH', `/v1/feedback/${r.body.id}`, { auth: t.key, body: { status: 'queued' } })).status).toBe(200)
  // The agent job was claimed and finished (no repository connected: nothing to run) well before a poll.
  await eventually(() => srv.ctx.sqlite.query('SELECT 1 FROM jobs WHERE feedback_id = ?').get(r.body.id) === null, 5_000)
  const item = (await call(srv.url, 'GET', `/v1/feedback/${r.body.id}`, { auth: t.key })).body
  expect(item.status).toBe('queued')
  expect(item.statusReason).toContain('connect-repo')
})
