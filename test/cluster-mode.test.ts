/**
 * Cluster mode against the compiled binary (issue 23): three `fixloop serve` nodes on one PostgreSQL, one
 * redis-server and s3rver (test/cluster-env.ts), all on loopback. What the contract's "Cluster mode"
 * promises, checked from outside and in the database: roles spread and held once; reports sent round-robin
 * are each sanitized exactly once; rate limits hold across the nodes together; a node killed mid-burst
 * loses no acknowledged report; the processing leader killed is replaced and its work taken over within
 * 30 s; Redis down is a fallback and a 503 naming `redis` on /readyz, never a 5xx, and its return is
 * noticed without a restart.
 *
 * Nodes run with FIXLOOP_NODE_LEASE_SECONDS=5 (leases of 5 s, renewed every 1.7 s: takeovers in seconds)
 * and FIXLOOP_TRUST_PROXY=1 (each load request names its own client address, so only the rate-limit case
 * shares a bucket).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Pool } from 'pg'
import { call, eventually, runBinary, spawnServer } from './harness'
import { clusterDirs } from './cluster-cli'
import { clusterEnv, startRedis, wakeCount, type RedisServer } from './cluster-env'
import { openPool } from '../src/db/pg/client-options'
import { PARTITION_OF_APP } from '../src/db/pg/jobs'
import { SlackStub } from './slack-stub'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'

type Node = Awaited<ReturnType<typeof spawnServer>>

let env: Record<string, string>
let pool: Pool
let redis: RedisServer
const nodes: Node[] = []
let tenant: { orgId: string; key: string; appId: string; pub: string }
/** The partition of Apps the tenant's App is in (src/nodes/partitions.ts: the database's hash of its id). */
let tenantPartition: number
const SLACK_TOKEN = 'xoxb-cluster-0123456789'
let slack: SlackStub

const { dataDir, cli, removeDirs } = clusterDirs('fixloop-cluster-node-', () => env)

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
  partitions?: number[]
  liveNodes?: number
  unheardPeers?: string[]
  warning?: string
}

/** The `node` and `redis` checks of a node's /readyz (from the 200 or from the 503's details). */
async function readiness(n: Node): Promise<{ status: number; node: NodeCheck; redis: NodeCheck }> {
  const r = await call(n.url, 'GET', '/readyz')
  const checks = r.status === 200 ? r.body.checks : r.body.error.details.checks
  return { status: r.status, node: checks.node, redis: checks.redis }
}

/**
 * Waits until the live nodes hold the two roles between them, each once, spread over as many nodes as there
 * are roles (or nodes), and the 16 partitions of Apps each once, every node its share (16 / live nodes,
 * rounded up) at most. `processing`: the node clustering the tenant's App (holding its partition).
 */
async function rolesSettled(live: Node[], timeoutMs = 20_000): Promise<{ maintenance: Node; dispatch: Node; processing: Node; partitions: Map<Node, number[]> }> {
  return eventually(async () => {
    const holders: Record<string, Node[]> = {}
    const partitions = new Map<Node, number[]>()
    for (const n of live) {
      const { node } = await readiness(n)
      for (const role of node.roles ?? []) (holders[role] ??= []).push(n)
      partitions.set(n, node.partitions ?? [])
    }
    const roles = ['maintenance', 'dispatch'] as const
    if (!roles.every((r) => holders[r]?.length === 1)) return undefined
    if (new Set(roles.map((r) => holders[r][0])).size !== Math.min(live.length, roles.length)) return undefined
    const all = [...partitions.values()].flat().sort((a, b) => a - b)
    if (JSON.stringify(all) !== JSON.stringify(Array.from({ length: 16 }, (_, i) => i))) return undefined
    if ([...partitions.values()].some((p) => p.length > Math.ceil(16 / live.length))) return undefined
    // A node clustering some partitions says `processing` among its roles.
    if (live.some((n) => partitions.get(n)!.length > 0 !== (holders.processing ?? []).includes(n))) return undefined
    const processing = live.find((n) => partitions.get(n)!.includes(tenantPartition))!
    return { maintenance: holders.maintenance[0], dispatch: holders.dispatch[0], processing, partitions }
  }, timeoutMs)
}

async function partitionOf(appId: string): Promise<number> {
  return (await pool.query<{ p: number }>(`SELECT ${PARTITION_OF_APP('$1::text')} AS p`, [appId])).rows[0].p
}

/**
 * Waits until every report of `ids` is processed: past sanitizing (another node may have sanitized it ahead,
 * issue 38.2) and its `process` job gone (clustered and routed by the node clustering its App).
 */
async function allProcessed(ids: string[], timeoutMs: number): Promise<void> {
  await eventually(async () => {
    const { rows } = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM feedback f WHERE id = ANY($1::text[]) AND status NOT IN ('received', 'sanitizing')
         AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.kind = 'process' AND j.feedback_id = f.id)`,
      [ids],
    )
    return rows[0].n === ids.length ? true : undefined
  }, timeoutMs)
}

let sent = 0
/** POSTs one report to `n` as its own client address; the id when acknowledged (201), else the status. */
async function submit(n: Node, text?: string, address?: string, publicKey = tenant.pub): Promise<{ status: number; id?: string; retryAfter?: string | null; error?: unknown }> {
  const i = sent++
  const res = await fetch(`${n.url}/v1/feedback`, {
    method: 'POST',
    headers: { authorization: `Bearer ${publicKey}`, 'content-type': 'application/json', 'x-forwarded-for': address ?? `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}` },
    body: JSON.stringify({ text: text ?? `Report ${i}: ${WORDS[i % WORDS.length]} ${WORDS[(i * 7 + 3) % WORDS.length]} fails on page ${i}` }),
  })
  const body = (await res.json().catch(() => ({}))) as { id?: string; error?: unknown }
  return { status: res.status, id: res.status === 201 ? body.id : undefined, retryAfter: res.headers.get('retry-after'), error: body.error }
}
const WORDS = ['checkout', 'invoice', 'avatar', 'search', 'export', 'login', 'calendar', 'upload', 'billing', 'sidebar', 'map', 'chart', 'profile', 'cart']

/** A node's `process` jobs done (`fixloop_node_jobs_done_total`): the reports it clustered. */
async function clusteredBy(node: Node): Promise<number> {
  const text = await (await fetch(`${node.url}/metrics`)).text()
  const line = text.split('\n').find((l) => l.startsWith('fixloop_node_jobs_done_total{') && l.includes('kind="process"'))
  return Number(line?.split(' ').at(-1) ?? 0)
}

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
  slack = new SlackStub(SLACK_TOKEN, ['C0CLUSTER'])
  env = {
    ...(await clusterEnv()),
    FIXLOOP_REDIS_URL: redis.url,
    FIXLOOP_LOG_LEVEL: 'warn',
    FIXLOOP_NODE_LEASE_SECONDS: '5',
    FIXLOOP_TRUST_PROXY: '1',
    FIXLOOP_WEBHOOK_ALLOW_PRIVATE: '1',
    FIXLOOP_SLACK_API_URL: slack.apiUrl,
  }
  pool = openPool(env.FIXLOOP_DATABASE_URL, 2)
  const org = await cli(['org', 'create', '--name', 'Acme'])
  const key = await cli(['key', 'create', '--org', org.id])
  const app = await cli(['app', 'create', '--org', org.id, '--name', 'Shop'])
  tenant = { orgId: org.id, key: key.key, appId: app.id, pub: app.publicKey }
  tenantPartition = await partitionOf(app.id)
  await Promise.all([startNode(), startNode(), startNode()])
}, 60_000)

afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop()))
  await pool?.end()
  await redis?.stop()
  slack?.stop()
  removeDirs()
})

const alive = () => nodes.filter((n) => n.proc.exitCode === null && !n.proc.killed)

describe('three nodes on one PostgreSQL and one Redis', () => {
  test('each node names itself on /readyz; the two roles spread over the nodes, each held by exactly one; the partitions of Apps spread, each held once', async () => {
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
    const { maintenance, dispatch, partitions } = await rolesSettled(nodes)
    // Spread: with three nodes, two hold a role each; every node clusters its share of the partitions (16 / 3: 6 at most).
    expect(maintenance).not.toBe(dispatch)
    for (const n of nodes) expect(partitions.get(n)!.length).toBeGreaterThanOrEqual(4)
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM cluster_nodes')
    expect(rows[0].n).toBe(3)
    // /metrics says which node answered and what it holds.
    for (const n of nodes) {
      const text = await (await fetch(`${n.url}/metrics`)).text()
      const id = (await readiness(n)).node.node!
      expect(text).toContain(`fixloop_node_role{node="${id}",role="maintenance"} ${n === maintenance ? 1 : 0}`)
      expect(text).toContain(`fixloop_node_role{node="${id}",role="dispatch"} ${n === dispatch ? 1 : 0}`)
      expect(text).toContain(`fixloop_node_role{node="${id}",role="processing"} 1`)
      expect(text).toContain(`fixloop_node_partitions{node="${id}"} ${partitions.get(n)!.length}`)
      expect(text).toContain(`fixloop_cluster_live_nodes{node="${id}"} 3`)
      // The database-wide gauges come from the maintenance holder only.
      expect(text.includes('fixloop_jobs_oldest_age_seconds')).toBe(n === maintenance)
    }
  }, 30_000)

  test('a read on any node sees a write made on another', async () => {
    const r = await submit(nodes[0])
    expect(r.status).toBe(201)
    for (const n of nodes) expect((await call(n.url, 'GET', `/v1/feedback/${r.id}`, { auth: tenant.key })).status).toBe(200)
  })

  test('a key revoked through one node (the CLI) is refused by every node within a second', async () => {
    const key = await cli(['key', 'create', '--org', tenant.orgId])
    for (const n of nodes) expect((await call(n.url, 'GET', '/v1/apps', { auth: key.key })).status).toBe(200)
    const revoked = await runBinary(['key', 'revoke', key.id, '--data-dir', dataDir()], env)
    expect(revoked.code).toBe(0)
    const t0 = Date.now()
    for (const n of nodes) await eventually(async () => ((await call(n.url, 'GET', '/v1/apps', { auth: key.key })).status === 401 ? true : undefined), 1_000)
    expect(Date.now() - t0).toBeLessThan(1_000)
  })

  // 1,200 reports: many group-commit batches on each node and many processing claims (bench/nodes.ts
  // measures the rates); more only makes the suite longer.
  test('1,200 reports sent round-robin: every one stored once and sanitized exactly once', async () => {
    const { acknowledged, refused } = await burst(() => nodes, 1200)
    expect(refused).toBe(0)
    expect(new Set(acknowledged).size).toBe(1200)
    await allProcessed(acknowledged, 120_000)
    const counts = await sanitizedCounts(acknowledged)
    expect(counts.size).toBe(1200)
    expect([...counts.values()].every((n) => n === 1)).toBe(true)
    // One `feedback.received` each, and the Org's seqs without a gap or a repeat.
    const { rows: received } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM events WHERE type = 'feedback.received' AND feedback_id = ANY($1::text[])`, [acknowledged])
    expect(received[0].n).toBe(1200)
    const { rows: seqs } = await pool.query<{ n: number; min: number; max: number }>('SELECT count(*)::int AS n, min(seq)::int AS min, max(seq)::int AS max FROM events WHERE org_id = $1', [tenant.orgId])
    expect(seqs[0].max - seqs[0].min + 1).toBe(seqs[0].n)
    expect((await pool.query("SELECT count(*)::int AS n FROM jobs WHERE kind = 'process'")).rows[0].n).toBe(0)
  }, 200_000)

  test('two Apps in partitions held by two nodes: each clustered by its own node, both at once, identical reports in one cluster per App', async () => {
    const { partitions, processing: first } = await rolesSettled(nodes)
    // Another App of the Org whose partition another node holds (Apps are spread by a hash of their id).
    let second: { id: string; publicKey: string; node: Node } | undefined
    for (let tries = 0; tries < 12 && !second; tries++) {
      const app = await cli(['app', 'create', '--org', tenant.orgId, '--name', `Second ${tries}`])
      const p = await partitionOf(app.id)
      const holder = nodes.find((n) => partitions.get(n)!.includes(p))!
      if (holder !== first) second = { id: app.id, publicKey: app.publicKey, node: holder }
    }
    expect(second).toBeDefined()
    const before = new Map(await Promise.all(nodes.map(async (n) => [n, await clusteredBy(n)] as const)))
    const TEXTS = [
      'The export button on the reports page does nothing when I click it',
      'Checkout total shows NaN after applying a discount code to the cart',
      'Avatar upload spinner keeps spinning forever and the picture never changes',
      'Search results show entries from last week instead of today',
      'The calendar view skips every Sunday when switching between months',
    ]
    const PER_TEXT = 30
    // Sampled while the two drain: when each node's count last moved and first moved.
    const moves = new Map<Node, { first?: number; last?: number }>(nodes.map((n) => [n, {}]))
    let sampling = true
    const sampler = (async () => {
      while (sampling) {
        for (const n of [first, second!.node]) {
          const m = moves.get(n)!
          if ((await clusteredBy(n)) > before.get(n)!) {
            m.first ??= Date.now()
            m.last = Date.now()
          }
        }
        await Bun.sleep(25)
      }
    })()
    const ids = { [tenant.appId]: [] as string[], [second!.id]: [] as string[] }
    let next = 0
    const jobs = TEXTS.flatMap((t) => Array.from({ length: PER_TEXT }, () => t)).flatMap((t) => [[tenant.appId, tenant.pub, t], [second!.id, second!.publicKey, t]] as const)
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < jobs.length) {
          const [app, key, text] = jobs[next]
          const r = await submit(nodes[next++ % 3], text, undefined, key)
          expect(r.status).toBe(201)
          ids[app].push(r.id!)
        }
      }),
    )
    const all = [...ids[tenant.appId], ...ids[second!.id]]
    await allProcessed(all, 60_000)
    sampling = false
    await sampler
    // Each App's reports were clustered by the node holding its partition: each node's count rose by its App's at least.
    expect((await clusteredBy(first)) - before.get(first)!).toBeGreaterThanOrEqual(ids[tenant.appId].length)
    expect((await clusteredBy(second!.node)) - before.get(second!.node)!).toBeGreaterThanOrEqual(ids[second!.id].length)
    // At once: each node was still clustering after the other had begun.
    const [a, b] = [moves.get(first)!, moves.get(second!.node)!]
    expect(a.first! < b.last! && b.first! < a.last!).toBe(true)
    // One cluster per text and App, never across Apps; each report sanitized once.
    const { rows: clusters } = await pool.query<{ app_id: string; text: string; leads: number; crossed: number }>(
      `SELECT f.app_id, f.text, count(DISTINCT COALESCE(f.duplicate_of_id, f.id))::int AS leads, count(*) FILTER (WHERE l.app_id <> f.app_id)::int AS crossed
         FROM feedback f LEFT JOIN feedback l ON l.id = f.duplicate_of_id WHERE f.id = ANY($1::text[]) GROUP BY f.app_id, f.text`,
      [all],
    )
    expect(clusters).toHaveLength(TEXTS.length * 2)
    for (const c of clusters) expect([c.text, c.leads, c.crossed]).toEqual([c.text, 1, 0])
    const counts = await sanitizedCounts(all)
    expect([...counts.values()].every((n) => n === 1)).toBe(true)
  }, 120_000)

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

  test('dashboard sign-in back-off holds across the nodes: wrong passwords spread over three nodes add up', async () => {
    // 5 free failures per (email, address) pair in all, not 5 per node (15 before the shared throttle).
    const codes: number[] = []
    for (let i = 0; i < 8; i++) {
      const r = await fetch(`${nodes[i % 3].url}/admin/api/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': '198.51.100.66' },
        body: JSON.stringify({ email: 'guess@example.com', password: `wrong password ${i}` }),
      })
      codes.push(r.status)
      await r.body?.cancel()
    }
    expect(codes.slice(0, 5)).toEqual([401, 401, 401, 401, 401])
    expect(codes.slice(5)).toEqual([429, 429, 429])
  }, 30_000)

  test('a node started with another FIXLOOP_REDIS_URL is named on /readyz, both ways, as a warning (all stay ready)', async () => {
    const otherRedis = await startRedis()
    const stray = await spawnServer(dataDir(), { ...env, FIXLOOP_REDIS_URL: otherRedis.url })
    try {
      const strayId = (await readiness(stray)).node.node!
      const ours = await Promise.all(nodes.map(async (n) => (await readiness(n)).node.node!))
      // The stray node hears none of the three; each of the three misses the stray one (and only it).
      await eventually(async () => {
        const s = await readiness(stray)
        return JSON.stringify(s.node.unheardPeers ?? []) === JSON.stringify([...ours].sort()) ? true : undefined
      }, 20_000)
      await eventually(async () => {
        const r = await readiness(nodes[0])
        return JSON.stringify(r.node.unheardPeers ?? []) === JSON.stringify([strayId]) ? r : undefined
      }, 20_000)
      const r = await readiness(nodes[0])
      expect(r.status).toBe(200)
      expect(r.node.warning).toContain('FIXLOOP_REDIS_URL')
      expect((await readiness(stray)).status).toBe(200)
    } finally {
      await stray.stop()
      await otherRedis.stop()
    }
    // Gone from the database: nobody is named any more.
    await eventually(async () => ((await readiness(nodes[0])).node.unheardPeers === undefined ? true : undefined), 20_000)
  }, 60_000)
})

describe('events, webhooks and uploads across nodes', () => {
  test('an SSE stream on one node carries the events committed on the others, seq rising without a gap; Last-Event-ID resumes on a third', async () => {
    // The stream on a node that does not process: it hears of a report only from the node that took it
    // (its commit's wake), never from processing it itself.
    const processor = (await rolesSettled(nodes)).processing
    const [watcher, other] = nodes.filter((n) => n !== processor)
    const start = (await pool.query<{ n: number }>('SELECT COALESCE(max(seq), 0)::int AS n FROM events WHERE org_id = $1', [tenant.orgId])).rows[0].n
    const stream = await fetch(`${watcher.url}/v1/events/stream?after=${start}&types=feedback.received`, { headers: { authorization: `Bearer ${tenant.key}` } })
    expect(stream.status).toBe(200)
    const reader = stream.body!.getReader()
    const seen: { seq: number; at: number }[] = []
    let buffer = ''
    const reading = (async () => {
      const decoder = new TextDecoder()
      for (;;) {
        const { value, done } = await reader.read()
        if (done) return
        buffer += decoder.decode(value, { stream: true })
        let cut: number
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, cut)
          buffer = buffer.slice(cut + 2)
          const id = frame.match(/^id: ?(\d+)$/m)
          if (id) seen.push({ seq: Number(id[1]), at: Date.now() })
        }
      }
    })()
    const sentAt: number[] = []
    const ids: string[] = []
    const heardBefore = await wakeCount(watcher, 'heard')
    for (let i = 0; i < 12; i++) {
      // Spaced out of step with any poll, so a lag reflects how the stream's node learnt of the event.
      await Bun.sleep(30 + Math.floor(Math.random() * 120))
      sentAt.push(Date.now())
      const r = await submit(i % 2 ? processor : other)
      expect(r.status).toBe(201)
      ids.push(r.id!)
    }
    await eventually(() => (seen.length >= 12 ? true : undefined), 10_000)
    await reader.cancel()
    await reading.catch(() => {})
    // Strictly rising (the Org's processing events take the seqs in between: the filter leaves them out).
    const seqs = seen.slice(0, 12).map((e) => e.seq)
    expect(seqs.every((seq, i) => i === 0 || seq > seqs[i - 1])).toBe(true)
    // Woken through Redis pub/sub by the committing node: well within the 1 s safety poll, which alone
    // would leave about three lags in four above 250 ms.
    const lags = seen.slice(0, 12).map((e, i) => e.at - sentAt[i])
    expect(lags.filter((ms) => ms < 250).length).toBeGreaterThanOrEqual(10)
    expect(await wakeCount(watcher, 'heard')).toBeGreaterThan(heardBefore)
    // The pull feed on a third node has the same events, and a resumed stream there starts right after the given id.
    const feed = await call(other.url, 'GET', `/v1/events?after=${start}&types=feedback.received&limit=12`, { auth: tenant.key })
    expect(feed.body.data.map((e: { seq: number }) => e.seq)).toEqual(seqs)
    expect(new Set(feed.body.data.map((e: { data: { feedbackId: string } }) => e.data.feedbackId))).toEqual(new Set(ids))
    const resumed = await fetch(`${other.url}/v1/events/stream?types=feedback.received`, { headers: { authorization: `Bearer ${tenant.key}`, 'last-event-id': String(seqs[5]) } })
    const r2 = resumed.body!.getReader()
    let text = ''
    const deadline = Date.now() + 5_000
    while ((text.match(/^id: /gm)?.length ?? 0) < 6 && Date.now() < deadline) {
      const { value, done } = await r2.read()
      if (done) break
      text += new TextDecoder().decode(value)
    }
    await r2.cancel()
    expect([...text.matchAll(/^id: ?(\d+)$/gm)].slice(0, 6).map((m) => Number(m[1]))).toEqual(seqs.slice(6))
  }, 30_000)

  test('each event reaches a webhook endpoint once, whichever node committed it', async () => {
    const received = new Map<string, number>()
    const receiver = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      async fetch(req) {
        const body = (await req.json()) as { id: string }
        received.set(body.id, (received.get(body.id) ?? 0) + 1)
        return new Response('ok')
      },
    })
    try {
      const hook = await cli(['webhook', 'create', '--org', tenant.orgId, '--url', `http://127.0.0.1:${receiver.port}/hook`, '--events', 'feedback.received'])
      expect(hook.secret).toMatch(/^whsec_/)
      const ids: string[] = []
      for (let i = 0; i < 30; i++) {
        const r = await submit(nodes[i % 3])
        expect(r.status).toBe(201)
        ids.push(r.id!)
      }
      const { rows } = await pool.query<{ id: string }>(`SELECT id FROM events WHERE type = 'feedback.received' AND feedback_id = ANY($1::text[])`, [ids])
      expect(rows).toHaveLength(30)
      await eventually(() => (rows.every((e) => received.has(e.id)) ? true : undefined), 20_000)
      // A moment more: a second delivery of any of them would show up now.
      await Bun.sleep(1_500)
      expect(rows.map((e) => received.get(e.id))).toEqual(rows.map(() => 1))
    } finally {
      receiver.stop(true)
    }
  }, 40_000)

  test('each lead is posted to the Slack channel once, whichever node committed it, at most one write a second', async () => {
    // An Org of its own: only these reports reach its channel.
    const org = await cli(['org', 'create', '--name', 'Slacked'])
    const app = await cli(['app', 'create', '--org', org.id, '--name', 'Desk'])
    const dir = dataDir()
    writeFileSync(join(dir, 'token'), SLACK_TOKEN)
    writeFileSync(join(dir, 'signing'), '0123456789abcdef0123456789abcdef')
    const connected = await runBinary(['chatops', 'slack', 'connect', '--org', org.id, '--bot-token-file', join(dir, 'token'), '--signing-secret-file', join(dir, 'signing'), '--channel', 'C0CLUSTER', '--json', '--data-dir', dir], env)
    expect(connected.code).toBe(0)
    const texts = ['The export button downloads an empty CSV file', 'Dark mode makes the sidebar labels unreadable', 'Search never returns results for quoted phrases', 'The calendar shows meetings one hour late after the time change', 'Uploading a profile picture fails with a spinner forever', 'The invoice total ignores the discount code']
    const ids: string[] = []
    for (const [i, text] of texts.entries()) {
      const r = await fetch(`${nodes[i % 3].url}/v1/feedback`, {
        method: 'POST',
        headers: { authorization: `Bearer ${app.publicKey}`, 'content-type': 'application/json', 'x-forwarded-for': `198.51.100.${40 + i}` },
        body: JSON.stringify({ text }),
      })
      expect(r.status).toBe(201)
      ids.push(((await r.json()) as { id: string }).id)
    }
    // Both counts from one snapshot: a report finishing between two queries would be counted as processed
    // but not yet as a lead.
    const expected = await eventually(async () => {
      const { leads, processed } = (
        await pool.query<{ leads: number; processed: number }>(
          `SELECT count(*) FILTER (WHERE duplicate_of_id IS NULL)::int AS leads, count(*)::int AS processed
           FROM feedback f WHERE id = ANY($1::text[]) AND status NOT IN ('received', 'sanitizing')
             AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.kind = 'process' AND j.feedback_id = f.id)`,
          [ids],
        )
      ).rows[0]
      return processed === ids.length ? leads : undefined
    }, 20_000)
    await eventually(() => (slack.parents('C0CLUSTER').length >= expected ? true : undefined), 30_000)
    // A moment more: a second post of any lead would show up now.
    await Bun.sleep(2_000)
    const parents = slack.parents('C0CLUSTER')
    // One parent per lead, naming it: the posted ids are the leads' ids, each once.
    const leadIds = (await pool.query<{ id: string }>(`SELECT id FROM feedback WHERE id = ANY($1::text[]) AND duplicate_of_id IS NULL`, [ids])).rows.map((r) => r.id).sort()
    expect(parents.map((m) => /fixloop report (\w+)/.exec(m.text)?.[1]).sort()).toEqual(leadIds)
    expect(parents).toHaveLength(expected)
    expect(slack.violations).toEqual([])
  }, 60_000)

  test('an upload URL from one node, the upload to S3, the submission on another, the read on a third', async () => {
    const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex')
    const issued = await fetch(`${nodes[0].url}/v1/feedback/upload-url`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.pub}`, 'content-type': 'application/json', 'x-forwarded-for': '198.51.100.20' },
      body: JSON.stringify({ contentType: 'image/png', byteSize: png.length, kind: 'attachment', filename: 'x.png' }),
    })
    expect(issued.status).toBe(200)
    const u = (await issued.json()) as { key: string; url: string; headers: Record<string, string> }
    expect(new URL(u.url).port).not.toBe(new URL(nodes[0].url).port)
    expect((await fetch(u.url, { method: 'PUT', headers: u.headers, body: png })).status).toBeLessThan(300)
    const sub = await fetch(`${nodes[1].url}/v1/feedback`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.pub}`, 'content-type': 'application/json', 'x-forwarded-for': '198.51.100.21' },
      body: JSON.stringify({ text: 'The attached screenshot shows the broken header', attachments: [{ key: u.key, kind: 'attachment', contentType: 'image/png', byteSize: png.length }] }),
    })
    expect(sub.status).toBe(201)
    const { id } = (await sub.json()) as { id: string }
    const item = await call(nodes[2].url, 'GET', `/v1/feedback/${id}`, { auth: tenant.key })
    expect(item.body.attachments).toHaveLength(1)
    const download = await fetch(item.body.attachments[0].url)
    expect(download.status).toBe(200)
    expect(Buffer.from(await download.arrayBuffer()).equals(png)).toBe(true)
  }, 30_000)
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

  test('the node clustering an App killed: the survivors take its partitions, and the waiting reports of the App are processed within 30 s', async () => {
    const { processing: leader } = await rolesSettled(alive())
    const survivor = alive().find((n) => n !== leader)!
    leader.proc.kill('SIGKILL')
    await leader.proc.exited
    const t0 = Date.now()
    const ids: string[] = []
    for (let i = 0; i < 20; i++) {
      const r = await submit(survivor)
      expect([r.status, r.error]).toEqual([201, undefined])
      ids.push(r.id!)
    }
    await allProcessed(ids, 30_000)
    expect(Date.now() - t0).toBeLessThan(30_000)
    // The one survivor clusters every partition now (the dead node's too).
    expect((await rolesSettled(alive())).partitions.get(survivor)).toHaveLength(16)
    expect((await readiness(survivor)).node.roles).toContain('processing')
    const counts = await sanitizedCounts(ids)
    expect([...counts.values()].every((n) => n === 1)).toBe(true)
  }, 60_000)
})
