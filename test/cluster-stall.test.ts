/**
 * Cluster mode with a node that stalls and resumes (SIGSTOP, then SIGCONT: what a long GC pause or a VM
 * frozen by its host does to it), against the compiled binary: two `fixloop serve` nodes on one PostgreSQL
 * and one redis-server, node leases of 2 s. The stalled node misses its beats, the other one counts it
 * dead, sweeps its job leases and takes its job; then the stalled node resumes and carries on with the job
 * it had in hand. The job must stay the live node's (docs/architecture.md "A stalled node").
 *
 * And a node stopped between two statements of a transaction must not hold its locks (the Org's event
 * counter: every node's intake for that Org) for the whole stall: PostgreSQL ends its session after a lease.
 *
 * The job is a tracker push (the GitHub stub, test/tracker-stub.ts, behind a proxy the test steers): the
 * proxy stops node A the moment its issue creation arrives, holds that request, and answers it (the issue
 * created) only once node B's creation for the same lead has arrived; B's is answered 503 after A resumed.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Pool } from 'pg'
import { call, eventually, spawnServer } from './harness'
import { clusterDirs } from './cluster-cli'
import { clusterEnv, startRedis, type RedisServer } from './cluster-env'
import { openPool } from '../src/db/pg/client-options'
import { startTrackerStub, STUB_PROJECT, type TrackerStub } from './tracker-stub'

type Node = Awaited<ReturnType<typeof spawnServer>>

let env: Record<string, string>
let redis: RedisServer
let pool: Pool
let stub: TrackerStub
let proxy: ReturnType<typeof Bun.serve>
const nodes: Node[] = []
let tenant: { orgId: string; key: string; appId: string; pub: string }

/** Issue creations as they reach the proxy, each answered when the test says. */
const creations: { answer: (how: 'forward' | 503) => void }[] = []
/** Told of each creation as it arrives (the first one stops node A). */
let onCreation: (n: number) => void = () => {}

const { dataDir, cli, removeDirs } = clusterDirs('fixloop-stall-node-', () => env)

beforeAll(async () => {
  redis = await startRedis()
  stub = startTrackerStub('github')
  proxy = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const url = new URL(req.url)
      const headers = new Headers(req.headers)
      headers.delete('host')
      const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : await req.arrayBuffer()
      if (req.method === 'POST' && url.pathname === `/repos/${STUB_PROJECT}/issues`) {
        const how = await new Promise<'forward' | 503>((answer) => {
          creations.push({ answer })
          onCreation(creations.length)
        })
        if (how === 503) return Response.json({ message: 'Service Unavailable' }, { status: 503 })
      }
      return fetch(stub.url + url.pathname + url.search, { method: req.method, headers, body })
    },
  })
  env = {
    ...(await clusterEnv()),
    FIXLOOP_REDIS_URL: redis.url,
    FIXLOOP_LOG_LEVEL: 'warn',
    FIXLOOP_NODE_LEASE_SECONDS: '2',
    FIXLOOP_TRACKER_ALLOW_PRIVATE: '1',
    FIXLOOP_TRACKER_POLL_MINUTES: '0',
    FIXLOOP_PUBLIC_URL: 'https://fixloop.example',
    // Each submission of the load names its own client address: no rate limit in the way.
    FIXLOOP_TRUST_PROXY: '1',
    FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000',
  }
  pool = openPool(env.FIXLOOP_DATABASE_URL, 2)
  const org = await cli(['org', 'create', '--name', 'Acme'])
  const key = await cli(['key', 'create', '--org', org.id])
  const app = await cli(['app', 'create', '--org', org.id, '--name', 'Shop'])
  tenant = { orgId: org.id, key: key.key, appId: app.id, pub: app.publicKey }
}, 60_000)

afterAll(async () => {
  // A stopped process cannot handle SIGTERM: continued first.
  for (const n of nodes) if (n.proc.exitCode === null) process.kill(n.proc.pid, 'SIGCONT')
  await Promise.all(nodes.map((n) => n.stop()))
  await pool?.end()
  proxy?.stop(true)
  stub?.stop()
  await redis?.stop()
  removeDirs()
})

const link = async (id: string) =>
  (await pool.query<{ issue_id: string | null; sync_state: string; last_error: string | null }>('SELECT issue_id, sync_state, last_error FROM tracker_issues WHERE feedback_id = $1', [id])).rows[0]
const pushJobs = async (id: string) =>
  (await pool.query<{ id: number; lease_owner: string | null; run_after: number }>("SELECT id, lease_owner, run_after FROM jobs WHERE kind = 'tracker_push' AND feedback_id = $1", [id])).rows

test('a node stopped mid-push and resumed after another node took the push over leaves the job to that node', async () => {
  const a = await spawnServer(dataDir(), env)
  nodes.push(a)
  const connected = await call(a.url, 'PUT', `/v1/apps/${tenant.appId}/tracker`, { auth: tenant.key, body: { kind: 'github', apiUrl: proxy.url.origin, project: STUB_PROJECT, token: stub.token } })
  expect(connected.status).toBe(200)
  const r = await call(a.url, 'POST', '/v1/feedback', { auth: tenant.pub, body: { text: 'The checkout button does nothing on the payment page.', severity: 'high' } })
  expect(r.status).toBe(201)
  const id: string = r.body.id
  await eventually(async () => ((await call(a.url, 'GET', `/v1/feedback/${id}`, { auth: tenant.key })).body.status === 'awaiting_manual' ? true : undefined), 20_000)

  // A (alone) runs the push; its issue creation reaches the tracker and A stops right then.
  onCreation = (n) => {
    if (n === 1) process.kill(a.proc.pid, 'SIGSTOP')
  }
  expect((await call(a.url, 'POST', `/v1/feedback/${id}/tracker-issue`, { auth: tenant.key })).status).toBe(202)
  await eventually(async () => (creations.length === 1 ? true : undefined), 10_000)
  const stoppedAt = performance.now()

  // B starts, counts A dead once A is silent for a lease, sweeps its job lease and runs the push itself.
  const b = await spawnServer(dataDir(), env)
  nodes.push(b)
  await eventually(async () => (creations.length === 2 ? true : undefined), 20_000)
  const takenOverMs = performance.now() - stoppedAt
  const [held] = await pushJobs(id)
  expect(held.lease_owner).not.toBeNull()

  // A's request gets its answer (the issue is created) and A resumes: it links the issue and ends its run.
  creations[0].answer('forward')
  process.kill(a.proc.pid, 'SIGCONT')
  await eventually(async () => ((await link(id))?.issue_id !== null && (await link(id)).sync_state === 'synced' ? true : undefined), 10_000)
  await Bun.sleep(1_000)
  // B's creation fails (the tracker answered 503): B marks the link failing and its job waits for the retry.
  creations[1].answer(503)
  await eventually(async () => ((await link(id)).sync_state === 'failing' ? true : undefined), 10_000)
  await Bun.sleep(500)

  // The push job is still there, B's to retry: A's run did not delete it from under B.
  const jobs = await pushJobs(id)
  expect(jobs).toHaveLength(1)
  // Its retry comes when the backoff says (30 s); here at once.
  await pool.query("UPDATE jobs SET run_after = 0 WHERE kind = 'tracker_push' AND feedback_id = $1", [id])
  await eventually(async () => ((await link(id)).sync_state === 'synced' && (await pushJobs(id)).length === 0 ? true : undefined), 15_000)
  // One issue at the tracker, linked; two creations asked for (A's before its stall, B's refused).
  expect(stub.issues.size).toBe(1)
  expect(creations).toHaveLength(2)
  expect((await link(id)).issue_id).toBe(String([...stub.issues.values()][0].number))
  console.log(`stall test: B took the push over ${Math.round(takenOverMs)} ms after A stopped`)
}, 60_000)

let sent = 0
/** A submission to `n` as its own client address: the id when acknowledged (201), else the status (0: no answer). */
async function submit(n: Node): Promise<{ status: number; id?: string }> {
  const i = sent++
  try {
    const res = await fetch(`${n.url}/v1/feedback`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.pub}`, 'content-type': 'application/json', 'x-forwarded-for': `10.9.${(i >> 8) & 255}.${i & 255}` },
      body: JSON.stringify({ text: `Report ${i}: the export of page ${i} fails with ${Math.random()}` }),
    })
    const body = (await res.json().catch(() => ({}))) as { id?: string }
    return { status: res.status, id: res.status === 201 ? body.id : undefined }
  } catch {
    return { status: 0 }
  }
}

/** Whether another session holds the Org's event counter row locked (an append in a transaction not ended). */
async function counterLocked(orgId: string): Promise<boolean> {
  const c = await pool.connect()
  try {
    await c.query('BEGIN')
    await c.query('SELECT 1 FROM event_counters WHERE org_id = $1 FOR UPDATE NOWAIT', [orgId])
    return false
  } catch (e) {
    if ((e as { code?: string }).code === '55P03') return true
    throw e
  } finally {
    await c.query('ROLLBACK').catch(() => {})
    c.release()
  }
}

test("a node stopped inside a transaction does not hold its locks (the Org's intake on every node) for the whole stall", async () => {
  const [a, b] = nodes
  const acknowledged: string[] = []
  let caught = false
  // Under a load of submissions to A, A is stopped: often between two statements of an intake batch's
  // transaction, with the Org's event counter row locked. Again until that is caught.
  for (let round = 0; round < 10 && !caught; round++) {
    let go = true
    const load = Promise.all(
      Array.from({ length: 16 }, async () => {
        while (go) {
          const r = await submit(a)
          if (r.id) acknowledged.push(r.id)
        }
      }),
    )
    await Bun.sleep(800)
    process.kill(a.proc.pid, 'SIGSTOP')
    go = false
    await Bun.sleep(300)
    caught = await counterLocked(tenant.orgId)
    if (caught) {
      // B takes the Org's submissions meanwhile: A's transaction is ended once idle for a lease (2 s).
      const t0 = performance.now()
      const onB = await Promise.all([submit(b), submit(b), submit(b)])
      const waitedMs = performance.now() - t0
      expect(onB.map((r) => r.status)).toEqual([201, 201, 201])
      expect(waitedMs).toBeLessThan(8_000)
      console.log(`stall test: B's submissions answered 201 after ${Math.round(waitedMs)} ms while A was stopped inside a transaction`)
    }
    process.kill(a.proc.pid, 'SIGCONT')
    await load
  }
  expect(caught).toBe(true)
  // A works again (its broken connection dropped), and every report A acknowledged is stored.
  await eventually(async () => ((await submit(a)).status === 201 ? true : undefined), 10_000)
  const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM feedback WHERE id = ANY($1::text[])', [acknowledged])
  expect(rows[0].n).toBe(acknowledged.length)
}, 60_000)
