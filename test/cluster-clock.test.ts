/**
 * Cluster mode with a node whose clock is wrong (issue 35.4): three `fixloop serve` nodes on one
 * PostgreSQL and one redis-server, one of them under libfaketime three minutes ahead (LD_PRELOAD, as the
 * `faketime` command does: the compiled Bun binary reads its time through libc, so `Date.now()` and the
 * `Date` header of its answers are shifted). Before the fix that node took the job leases the others
 * still held (their lease ran out on its clock) and every tracker issue of a burst was created twice.
 * Now the leases and due times are the database's clock, and each push job runs exactly once.
 *
 * The tracker is the GitHub stub (test/tracker-stub.ts) behind a proxy that answers an issue creation only
 * after a while, so every push is in flight long enough for a wrong claim to happen if one could.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { call, eventually, spawnServer } from './harness'
import { clusterDirs } from './cluster-cli'
import { clusterEnv, startRedis, type RedisServer } from './cluster-env'
import { startTrackerStub, STUB_PROJECT, type TrackerStub } from './tracker-stub'

type Node = Awaited<ReturnType<typeof spawnServer>>

const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1'
const SKEW_MS = 3 * 60_000
/** How long the tracker takes to create an issue: each push holds its job lease that long. */
const CREATE_DELAY_MS = 1_500
const REPORTS = 12

let env: Record<string, string>
let redis: RedisServer
let stub: TrackerStub
let proxy: ReturnType<typeof Bun.serve>
const nodes: Node[] = []
let tenant: { key: string; appId: string; pub: string }
let creations = 0

const { dataDir, cli, removeDirs } = clusterDirs('fixloop-clock-node-', () => env)

const FAKETIME_SKIP = existsSync(LIBFAKETIME) ? undefined : `${LIBFAKETIME} is missing (Debian's faketime package: scripts/test-setup.sh installs it)`
if (FAKETIME_SKIP) console.warn(`clock-skew cluster test skipped: ${FAKETIME_SKIP}`)

beforeAll(async () => {
  if (FAKETIME_SKIP) return
  redis = await startRedis()
  stub = startTrackerStub('github')
  // A slow tracker: issue creations are answered after CREATE_DELAY_MS (counted as they arrive).
  proxy = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const url = new URL(req.url)
      const creating = req.method === 'POST' && url.pathname === `/repos/${STUB_PROJECT}/issues`
      if (creating) {
        creations++
        await Bun.sleep(CREATE_DELAY_MS)
      }
      const headers = new Headers(req.headers)
      headers.delete('host')
      const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : await req.arrayBuffer()
      return fetch(stub.url + url.pathname + url.search, { method: req.method, headers, body })
    },
  })
  env = {
    ...(await clusterEnv()),
    FIXLOOP_REDIS_URL: redis.url,
    FIXLOOP_LOG_LEVEL: 'warn',
    FIXLOOP_NODE_LEASE_SECONDS: '5',
    FIXLOOP_TRACKER_ALLOW_PRIVATE: '1',
    FIXLOOP_TRACKER_POLL_MINUTES: '0',
    FIXLOOP_PUBLIC_URL: 'https://fixloop.example',
    FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000',
  }
  const org = await cli(['org', 'create', '--name', 'Acme'])
  const key = await cli(['key', 'create', '--org', org.id])
  const app = await cli(['app', 'create', '--org', org.id, '--name', 'Shop'])
  tenant = { key: key.key, appId: app.id, pub: app.publicKey }
  nodes.push(await spawnServer(dataDir(), env), await spawnServer(dataDir(), env))
  // The third node three minutes ahead (libfaketime, what `faketime -f +3m` sets).
  nodes.push(await spawnServer(dataDir(), { ...env, LD_PRELOAD: LIBFAKETIME, FAKETIME: '+3m', DONT_FAKE_MONOTONIC: '1' }))
}, 90_000)

afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop()))
  proxy?.stop(true)
  stub?.stop()
  await redis?.stop()
  removeDirs()
})

describe.skipIf(!!FAKETIME_SKIP)('three nodes, one of them 3 minutes ahead', () => {
  const item = async (id: string) => (await call(nodes[0].url, 'GET', `/v1/feedback/${id}`, { auth: tenant.key })).body

  /** Submits a report through `n` (words that share nothing with any other report: never a duplicate); its id. */
  async function report(n: Node): Promise<string> {
    const words = Array.from({ length: 6 }, () => randomBytes(5).toString('hex')).join(' ')
    const r = await call(n.url, 'POST', '/v1/feedback', { auth: tenant.pub, body: { text: `Report: ${words}`, severity: 'high' } })
    expect(r.status).toBe(201)
    return r.body.id
  }

  test('a node 3 minutes ahead: every report pushed to the tracker makes exactly one issue', async () => {
    // The fast node's clock really is ahead (its HTTP Date header), the others' are not.
    const dateOf = async (n: Node) => Date.parse((await fetch(`${n.url}/healthz`)).headers.get('date')!)
    expect((await dateOf(nodes[2])) - Date.now()).toBeGreaterThan(SKEW_MS - 10_000)
    expect(Math.abs((await dateOf(nodes[0])) - Date.now())).toBeLessThan(10_000)

    const connected = await call(nodes[0].url, 'PUT', `/v1/apps/${tenant.appId}/tracker`, { auth: tenant.key, body: { kind: 'github', apiUrl: proxy.url.origin, project: STUB_PROJECT, token: stub.token } })
    expect(connected.status).toBe(200)
    const before = creations

    // Reports (texts that share nothing: no duplicates), each processed to awaiting_manual.
    const ids: string[] = []
    for (let i = 0; i < REPORTS; i++) ids.push(await report(nodes[i % 2]))
    await eventually(async () => ((await Promise.all(ids.map(item))).every((f) => f.status === 'awaiting_manual') ? true : undefined), 60_000)

    // The burst: each pushed through a different node, all at once; any node's worker may run any push.
    const pushed = await Promise.all(ids.map((id, i) => call(nodes[i % 3].url, 'POST', `/v1/feedback/${id}/tracker-issue`, { auth: tenant.key })))
    expect(pushed.map((p) => p.status)).toEqual(ids.map(() => 202))
    const issues = await eventually(async () => {
      const all = await Promise.all(ids.map(item))
      return all.every((f) => f.trackerIssue?.syncState === 'synced') ? all.map((f) => f.trackerIssue.key) : undefined
    }, 90_000)
    // A while longer: a second run of a push (a lease taken while the first was in flight) would show by now.
    await Bun.sleep(CREATE_DELAY_MS * 3)
    expect(new Set(issues).size).toBe(REPORTS)
    expect(creations - before).toBe(REPORTS)
    expect(stub.issues.size).toBe(REPORTS)
  }, 150_000)

  test('a report taken by the node 3 minutes ahead is processed at once, not 3 minutes late', async () => {
    // Its job's run_after is the database's now (the node's clock is set to it), not the node's own time.
    const id = await report(nodes[2])
    await eventually(async () => ((await item(id)).status === 'awaiting_manual' ? true : undefined), 30_000)
  }, 60_000)
})
