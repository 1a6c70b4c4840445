/**
 * Single sign-on across the nodes of a cluster (docs/operations.md "What a cluster does not share" no
 * longer lists it): an SSO state spent at one node's callback is spent at every node's. Before, each node
 * remembered its spent states in its own memory, so the same callback (its URL and the flow cookie)
 * replayed at another node opened the flow again and redeemed the code at the provider a second time;
 * only the provider's single use of the code refused it. Now the state is claimed once for the cluster
 * (the proof-of-work solutions' single-use claim: Redis SET NX, the database while Redis cannot answer),
 * so the second node refuses it without asking the provider.
 *
 * Two compiled `fixloop serve` nodes on one PostgreSQL and a redis-server of this file's own (test/cluster-env.ts),
 * the real OpenID provider (test/oidc-idp.ts), no browser (playwright's request client holds the cookies):
 * with Redis up, with Redis down (the claim goes to the database: still refused, never accepted), spent
 * while Redis was down and replayed once it is back, and with Redis refusing writes (a read-only replica).
 *
 * The per-address limits of signing in are shared the same way (Redis token buckets, as the spec's rate
 * limits): `GET /admin/oidc/start`'s 30 and the setup link's 10 hold for the cluster, not per node (an
 * address spreading its requests over two nodes had twice them); while Redis is away each node allows its
 * share (the limit divided by the live nodes), so the cluster together still allows the limit.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { request } from 'playwright-core'
import { RedisClient } from 'bun'
import { eventually, freePort } from './harness'
import { clusterDirs } from './cluster-cli'
import { clusterEnv, startRedis, type RedisServer } from './cluster-env'
import { startIdp, type TestIdp } from './oidc-idp'
import { followToCallback, serveSso, tempDirIn, type SsoServer } from './sso-helpers'

const roots: string[] = []
let idp: TestIdp
let redis: RedisServer
let env: Record<string, string>
const nodes: SsoServer[] = []
const { cli, removeDirs } = clusterDirs('fixloop-cluster-sso-', () => env)

beforeAll(async () => {
  redis = await startRedis()
  // FIXLOOP_TRUST_PROXY: each limit case names its own client address (X-Forwarded-For).
  env = { ...(await clusterEnv(undefined, { migrated: true })), FIXLOOP_REDIS_URL: redis.url, FIXLOOP_NODE_LEASE_SECONDS: '5', FIXLOOP_TRUST_PROXY: '1' }
  await cli(['admin', 'create', '--email', 'alice@example.com', '--no-password'])
  // One public URL for both nodes, as behind a balancer: the provider sends every browser back to it.
  const [portA, portB] = [await freePort(), await freePort()]
  const publicUrl = `http://127.0.0.1:${portA}`
  idp = await startIdp(`${publicUrl}/admin/oidc/callback`)
  const parent = tempDirIn(roots, 'fixloop-cluster-sso-')
  nodes.push(await serveSso(idp, join(parent, 'a'), portA, { ...env, FIXLOOP_PUBLIC_URL: publicUrl }))
  nodes.push(await serveSso(idp, join(parent, 'b'), portB, { ...env, FIXLOOP_PUBLIC_URL: publicUrl }))
}, 60_000)

afterAll(async () => {
  for (const n of nodes) await n.stop()
  await idp?.close()
  await redis?.stop()
  removeDirs()
  for (const r of roots) rmSync(r, { recursive: true, force: true })
})

/** Both nodes use Redis again (a link that failed waits a second before it tries again: src/nodes/redis-link.ts). */
async function sharedAgain(): Promise<void> {
  await eventually(async () => {
    for (const n of nodes) if ((await fetch(n.url + '/readyz')).status !== 200) return false
    return true
  }, 20_000)
}

/**
 * A sign-in through node A up to its callback: the callback URL and the flow cookie (what a replay
 * needs), then the callback itself at node A. Resolves once node A signed alice in.
 */
async function signInAtA(): Promise<{ callback: URL; flowCookie: string }> {
  const [a] = nodes
  const api = await request.newContext()
  try {
    const { callback } = await followToCallback({ request: api }, a.url, a.url + '/admin/oidc/start', 'alice')
    const flow = (await api.storageState()).cookies.find((c) => c.name === 'fixloop_oidc')
    expect(flow).toBeDefined()
    const done = await api.get(callback, { maxRedirects: 0 })
    expect(done.status()).toBe(303)
    expect(done.headers()['location']).toBe('/admin')
    return { callback: new URL(callback), flowCookie: `fixloop_oidc=${flow!.value}` }
  } finally {
    await api.dispose()
  }
}

/** The same callback (query and flow cookie) presented at node B: its status and page. */
async function replayAtB(spent: { callback: URL; flowCookie: string }): Promise<{ status: number; page: string; setCookie: string | null }> {
  const b = nodes[1]
  const r = await fetch(b.url + spent.callback.pathname + spent.callback.search, { redirect: 'manual', headers: { cookie: spent.flowCookie } })
  return { status: r.status, page: await r.text(), setCookie: r.headers.get('set-cookie') }
}

/** A replay refused as spent: no session, and the provider was not asked to redeem the code again. */
async function expectRefusedAsSpent(spent: { callback: URL; flowCookie: string }): Promise<void> {
  const redemptions = idp.tokenRequests
  const replay = await replayAtB(spent)
  expect(replay.status).toBe(400)
  expect(replay.page).toContain('expired, was already used, or was started in another browser')
  expect(replay.setCookie ?? '').not.toContain('fixloop_admin=')
  expect(idp.tokenRequests).toBe(redemptions)
}

describe('a spent SSO state is spent on every node', () => {
  test('a callback replayed at another node is refused, without a second redemption at the provider', async () => {
    const spent = await signInAtA()
    await expectRefusedAsSpent(spent)
    // And at node A itself, as before.
    const again = await fetch(nodes[0].url + spent.callback.pathname + spent.callback.search, { redirect: 'manual', headers: { cookie: spent.flowCookie } })
    expect(again.status).toBe(400)
  }, 60_000)

  test('Redis down: the state is claimed in the database, so the replay at another node is still refused; spent then and replayed once Redis is back, refused too', async () => {
    await redis.halt()
    let spentWhileDown: { callback: URL; flowCookie: string }
    try {
      spentWhileDown = await signInAtA()
      await expectRefusedAsSpent(spentWhileDown)
    } finally {
      await redis.restart()
    }
    // Redis is back (empty: it kept nothing) once a node's readiness says so; the claim made in the database
    // meanwhile is still checked there (the proof-of-work marker), so Redis granting it does not let it in.
    await eventually(async () => (await fetch(nodes[1].url + '/readyz')).status === 200, 20_000)
    await expectRefusedAsSpent(spentWhileDown!)
    const fresh = await signInAtA()
    await expectRefusedAsSpent(fresh)
  }, 90_000)

  test('Redis refusing writes (a read-only replica): refused through the database as well', async () => {
    const admin = new RedisClient(redis.url)
    await admin.send('REPLICAOF', ['127.0.0.1', '1'])
    try {
      const spent = await signInAtA()
      await expectRefusedAsSpent(spent)
    } finally {
      await admin.send('REPLICAOF', ['NO', 'ONE'])
      admin.close()
    }
    await sharedAgain()
  }, 60_000)
})

/** POST /admin/api/setup with a token that is no setup link's, from `address`: 403 invalid_setup_token while the limit lets it through, then 429. */
const trySetup = (url: string, address: string) =>
  fetch(url + '/admin/api/setup', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': address },
    body: JSON.stringify({ token: 'not-a-setup-link', email: 'owner@example.com', password: 'a long enough password' }),
  })

/** GET /admin/oidc/start from `address`, not followed: 303 to the provider, or 429. */
const startAt = (url: string, address: string) => fetch(url + '/admin/oidc/start', { redirect: 'manual', headers: { 'x-forwarded-for': address } })

describe('the per-address limits of signing in hold for the cluster', () => {
  test('GET /admin/oidc/start: 30 starts at one node, and the next one at the other node is a 429', async () => {
    const [a, b] = nodes
    const burst = await Promise.all(Array.from({ length: 30 }, () => startAt(a.url, '203.0.113.30')))
    expect(burst.map((r) => r.status)).toEqual(Array(30).fill(303))
    const limited = await startAt(b.url, '203.0.113.30')
    expect(limited.status).toBe(429)
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect(limited.headers.get('set-cookie')).toBeNull()
    // Another address is not held up.
    expect((await startAt(b.url, '203.0.113.31')).status).toBe(303)
  }, 60_000)

  test('the setup link: 12 tries at once, 6 at each node, and 2 of them are 429s (each node counting alone let all 12 through)', async () => {
    const [a, b] = nodes
    // At once: a try hashes the password it was sent (~0.7 s here) after taking its token, and one token
    // comes back every six seconds; sent one after another, the tries would be refilled as they go.
    const tries = await Promise.all([a, b].flatMap((n) => Array.from({ length: 6 }, () => trySetup(n.url, '198.51.100.40'))))
    const codes = await Promise.all(tries.map(async (r) => ((await r.json()) as { error: { code: string } }).error.code))
    expect(codes.filter((c) => c === 'invalid_setup_token')).toHaveLength(10)
    expect(codes.filter((c) => c === 'rate_limited')).toHaveLength(2)
    const limited = tries.find((r) => r.status === 429)!
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
  }, 60_000)

  test('Redis down: each of the two nodes allows its share (5 setup tries, 15 starts) and refuses the next, never a 5xx', async () => {
    const [a, b] = nodes
    await redis.halt()
    try {
      for (const n of [a, b]) {
        const tries = await Promise.all(Array.from({ length: 6 }, () => trySetup(n.url, '198.51.100.50')))
        expect(tries.map((r) => r.status).sort()).toEqual([403, 403, 403, 403, 403, 429])
        const starts = await Promise.all(Array.from({ length: 15 }, () => startAt(n.url, '203.0.113.50')))
        expect(starts.map((r) => r.status)).toEqual(Array(15).fill(303))
        expect((await startAt(n.url, '203.0.113.50')).status).toBe(429)
      }
    } finally {
      await redis.restart()
    }
    await sharedAgain()
  }, 60_000)
})
