/**
 * Cluster mode against the compiled binary (issue 23): three `fixloop serve` nodes on one PostgreSQL, one
 * redis-server and s3rver (test/cluster-env.ts), all on loopback. What the contract's "Cluster mode"
 * promises, checked from outside and in the database: roles spread and held once; reports sent round-robin
 * are each sanitized exactly once; rate limits hold across the nodes together; a node killed mid-burst
 * loses no acknowledged report; the processing leader killed is replaced and its work taken over within
 * 30 s; Redis down is a fallback and a 503 naming `redis` on /readyz, never a 5xx, and its return is
 * noticed without a restart.
 *
 * Nodes run with FIXLOOP_NODE_LEASE_SECONDS=3 (leases of 3 s, renewed every second: takeovers in seconds)
 * and FIXLOOP_TRUST_PROXY=1 (each load request names its own client address, so only the rate-limit case
 * shares a bucket).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import type { Pool } from 'pg'
import { call, eventually, runBinary, spawnServer, tempDir } from './harness'
import { clusterEnv, startRedis, type RedisServer } from './cluster-env'
import { openPool } from '../src/db/pg/client-options'

type Node = Awaited<ReturnType<typeof spawnServer>>

let env: Record<string, string>
let pool: Pool
let redis: RedisServer
const dirs: string[] = []
const nodes: Node[] = []
let tenant: { orgId: string; key: string; appId: string; pub: string }

const dataDir = () => {
  const d = tempDir('fixloop-cluster-node-')
  dirs.push(d)
  return d
}

async function cli(args: string[]): Promise<any> {
  const r = await runBinary([...args, '--json', '--data-dir', dataDir()], env)
  if (r.code !== 0) throw new Error(`fixloop ${args.join(' ')}: exit ${r.code}: ${r.stderr}`)
  return JSON.parse(r.stdout)
}

async function startNode(): Promise<Node> {
  const n = await spawnServer(dataDir(), env)
  nodes.push(n)
  return n
}

interface NodeCheck {
  ok: boolean
  reason?: string
  node?: string
  roles?: string[]
  liveNodes?: number
}

/** The `node` and `redis` checks of a node's /readyz (from the 200 or from the 503's details). */
async function readiness(n: Node): Promise<{ status: number; node: NodeCheck; redis: NodeCheck }> {
  const r = await call(n.url, 'GET', '/readyz')
  const checks = r.status === 200 ? r.body.checks : r.body.error.details.checks
  return { status: r.status, node: checks.node, redis: checks.redis }
}

/**
 * Waits until the live nodes hold the three roles between them, each once, spread over as many nodes as
 * there are roles (or nodes); the holder of each.
 */
async function rolesSettled(live: Node[], timeoutMs = 20_000): Promise<Record<string, Node>> {
  return eventually(async () => {
    const holders: Record<string, Node[]> = {}
    for (const n of live) {
      const { node } = await readiness(n)
      for (const role of node.roles ?? []) (holders[role] ??= []).push(n)
    }
    const roles = ['processing', 'maintenance', 'dispatch']
    if (!roles.every((r) => holders[r]?.length === 1)) return undefined
    if (new Set(roles.map((r) => holders[r][0])).size !== Math.min(live.length, roles.length)) return undefined
    return Object.fromEntries(roles.map((r) => [r, holders[r][0]]))
  }, timeoutMs)
}

let sent = 0
/** POSTs one report to `n` as its own client address; the id when acknowledged (201), else the status. */
async function submit(n: Node, text?: string, address?: string): Promise<{ status: number; id?: string; retryAfter?: string | null }> {
  const i = sent++
  const res = await fetch(`${n.url}/v1/feedback`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tenant.pub}`, 'content-type': 'application/json', 'x-forwarded-for': address ?? `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}` },
    body: JSON.stringify({ text: text ?? `Report ${i}: ${WORDS[i % WORDS.length]} ${WORDS[(i * 7 + 3) % WORDS.length]} fails on page ${i}` }),
  })
  const body = (await res.json().catch(() => ({}))) as { id?: string }
  return { status: res.status, id: res.status === 201 ? body.id : undefined, retryAfter: res.headers.get('retry-after') }
}
const WORDS = ['checkout', 'invoice', 'avatar', 'search', 'export', 'login', 'calendar', 'upload', 'billing', 'sidebar', 'map', 'chart', 'profile', 'cart']

/** `count` submissions spread round-robin over `targets`, `concurrency` at a time, bounded in time too. */
async function burst(targets: () => Node[], count: number, concurrency = 24, deadlineMs = 120_000): Promise<{ acknowledged: string[]; refused: number }> {
  const acknowledged: string[] = []
  let refused = 0
  let next = 0
  const end = Date.now() + deadlineMs
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count && Date.now() < end) {
        const i = next++
        const list = targets()
        try {
          const r = await submit(list[i % list.length])
          if (r.id) acknowledged.push(r.id)
          else refused++
        } catch {
          refused++ // a node killed under us: no answer, nothing acknowledged
        }
      }
    }),
  )
  return { acknowledged, refused }
}

/** Per report: how often it was sanitized (its `status_changed` events to `sanitized`). */
async function sanitizedCounts(ids: string[]): Promise<Map<string, number>> {
  const { rows } = await pool.query<{ feedback_id: string; n: number }>(
    `SELECT feedback_id, count(*)::int AS n FROM events WHERE type = 'feedback.status_changed' AND data::json->>'to' = 'sanitized' AND feedback_id = ANY($1::text[]) GROUP BY feedback_id`,
    [ids],
  )
  return new Map(rows.map((r) => [r.feedback_id, r.n]))
}

beforeAll(async () => {
  redis = await startRedis()
  env = {
    ...(await clusterEnv()),
    FIXLOOP_REDIS_URL: redis.url,
    FIXLOOP_LOG_LEVEL: 'warn',
    FIXLOOP_NODE_LEASE_SECONDS: '3',
    FIXLOOP_TRUST_PROXY: '1',
  }
  pool = openPool(env.FIXLOOP_DATABASE_URL, 2)
  const org = await cli(['org', 'create', '--name', 'Acme'])
  const key = await cli(['key', 'create', '--org', org.id])
  const app = await cli(['app', 'create', '--org', org.id, '--name', 'Shop'])
  tenant = { orgId: org.id, key: key.key, appId: app.id, pub: app.publicKey }
  await Promise.all([startNode(), startNode(), startNode()])
}, 60_000)

afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop()))
  await pool?.end()
  await redis?.stop()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

const alive = () => nodes.filter((n) => n.proc.exitCode === null && !n.proc.killed)

describe('three nodes on one PostgreSQL and one Redis', () => {
  test('each node names itself on /readyz; the three roles spread over the nodes, each held by exactly one', async () => {
    const ids = new Set<string>()
    for (const n of nodes) {
      const { status, node, redis: r } = await readiness(n)
      expect(status).toBe(200)
      expect(node.ok).toBe(true)
      expect(node.node).toMatch(/^node_[0-9a-f]{16}$/)
      expect(r.ok).toBe(true)
      ids.add(node.node!)
    }
    expect(ids.size).toBe(3)
    const holders = await rolesSettled(nodes)
    // Spread: with three nodes each holds one role.
    expect(new Set(Object.values(holders)).size).toBe(3)
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM cluster_nodes')
    expect(rows[0].n).toBe(3)
  }, 30_000)

  test('a read on any node sees a write made on another', async () => {
    const r = await submit(nodes[0])
    expect(r.status).toBe(201)
    for (const n of nodes) expect((await call(n.url, 'GET', `/v1/feedback/${r.id}`, { auth: tenant.key })).status).toBe(200)
  })

  test('3,000 reports sent round-robin: every one stored once and sanitized exactly once', async () => {
    const { acknowledged, refused } = await burst(() => nodes, 3000)
    expect(refused).toBe(0)
    expect(new Set(acknowledged).size).toBe(3000)
    const done = await eventually(async () => {
      const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM feedback WHERE id = ANY($1::text[]) AND status NOT IN ('received', 'sanitizing')`, [acknowledged])
      return rows[0].n === 3000 ? rows[0].n : undefined
    }, 120_000)
    expect(done).toBe(3000)
    const counts = await sanitizedCounts(acknowledged)
    expect(counts.size).toBe(3000)
    expect([...counts.values()].every((n) => n === 1)).toBe(true)
    // One `feedback.received` each, and the Org's seqs without a gap or a repeat.
    const { rows: received } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM events WHERE type = 'feedback.received' AND feedback_id = ANY($1::text[])`, [acknowledged])
    expect(received[0].n).toBe(3000)
    const { rows: seqs } = await pool.query<{ n: number; min: number; max: number }>('SELECT count(*)::int AS n, min(seq)::int AS min, max(seq)::int AS max FROM events WHERE org_id = $1', [tenant.orgId])
    expect(seqs[0].max - seqs[0].min + 1).toBe(seqs[0].n)
    expect((await pool.query("SELECT count(*)::int AS n FROM jobs WHERE kind = 'process'")).rows[0].n).toBe(0)
  }, 200_000)

  test('the public submission limit holds across the three nodes together (60 a minute, not 60 each)', async () => {
    const results: { status: number; retryAfter?: string | null }[] = []
    for (let i = 0; i < 90; i++) results.push(await submit(nodes[i % 3], `limited ${i}`, '203.0.113.77'))
    const accepted = results.filter((r) => r.status === 201).length
    // 60 in the bucket, plus what refilled (one a second) while the 90 went out.
    expect(accepted).toBeGreaterThanOrEqual(60)
    expect(accepted).toBeLessThan(66)
    const refused = results.filter((r) => r.status === 429)
    expect(refused.length).toBe(90 - accepted)
    expect(Number(refused[0].retryAfter)).toBeGreaterThanOrEqual(1)
  }, 60_000)
})

describe('faults', () => {
  test('Redis down: submissions still 201 (local share of the limits), /readyz 503 naming redis; back without a restart', async () => {
    await redis.halt()
    try {
      const n = nodes[0]
      const down = await eventually(async () => {
        const r = await readiness(n)
        return r.status === 503 && r.redis.ok === false ? r : undefined
      }, 10_000)
      expect(down.redis.reason).toContain('Redis')
      for (let i = 0; i < 5; i++) expect((await submit(nodes[i % 3])).status).toBe(201)
    } finally {
      await redis.restart()
    }
    for (const n of nodes) {
      await eventually(async () => ((await readiness(n)).status === 200 ? true : undefined), 15_000)
    }
    expect((await submit(nodes[1])).status).toBe(201)
  }, 60_000)

  test('a node killed (kill -9) mid-burst: every acknowledged report is stored and processed; its row goes stale', async () => {
    const victim = nodes[2]
    const run = burst(alive, 900, 16)
    await Bun.sleep(300)
    victim.proc.kill('SIGKILL')
    await victim.proc.exited
    const { acknowledged } = await run
    expect(acknowledged.length).toBeGreaterThan(500)
    const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM feedback WHERE id = ANY($1::text[])', [acknowledged])
    expect(rows[0].n).toBe(acknowledged.length)
    await eventually(async () => {
      const { rows: left } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM feedback WHERE id = ANY($1::text[]) AND status IN ('received', 'sanitizing')`, [acknowledged])
      return left[0].n === 0 ? true : undefined
    }, 60_000)
    const counts = await sanitizedCounts(acknowledged)
    expect([...counts.values()].every((n) => n === 1)).toBe(true)
    // The survivors count two live nodes once the victim's beat is older than the lease.
    await eventually(async () => ((await readiness(nodes[0])).node.liveNodes === 2 ? true : undefined), 15_000)
  }, 120_000)

  test('the processing leader killed: another node takes the role and the reports waiting are processed within 30 s', async () => {
    const holders = await rolesSettled(alive())
    const leader = holders.processing
    const survivor = alive().find((n) => n !== leader)!
    leader.proc.kill('SIGKILL')
    await leader.proc.exited
    const t0 = Date.now()
    const ids: string[] = []
    for (let i = 0; i < 20; i++) {
      const r = await submit(survivor)
      expect(r.status).toBe(201)
      ids.push(r.id!)
    }
    await eventually(async () => {
      const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM feedback WHERE id = ANY($1::text[]) AND status NOT IN ('received', 'sanitizing')`, [ids])
      return rows[0].n === ids.length ? true : undefined
    }, 30_000)
    expect(Date.now() - t0).toBeLessThan(30_000)
    expect((await readiness(survivor)).node.roles).toContain('processing')
    const counts = await sanitizedCounts(ids)
    expect([...counts.values()].every((n) => n === 1)).toBe(true)
  }, 60_000)
})
