/**
 * Submissions with an Idempotency-Key (the widget sends every report with one) on two compiled nodes over one
 * PostgreSQL: each node's group commit (src/db/pg/group-commit.ts) stores such a report on its own in the
 * batch, bumping its Org's event counter after locking the key's row. Two nodes' batches took the counters
 * of two Orgs in opposite orders (or a key row and a counter), deadlocked, and PostgreSQL broke each cycle
 * after 1 s: batches stalled and the aborted write answered 500 (four Orgs over three nodes: 382 reports in
 * a minute, 23 answered 500, p50 4 s). The batch now locks its Orgs' counters first, in one order.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Pool } from 'pg'
import { spawnLoggedServer } from './harness'
import { clusterDirs } from './cluster-cli'
import { clusterEnv } from './cluster-env'
import { openPool } from '../src/db/pg/client-options'

type Node = Awaited<ReturnType<typeof spawnLoggedServer>>

let env: Record<string, string>
let pool: Pool
const nodes: Node[] = []
/** Public keys of four Apps, one per Org. */
const apps: string[] = []

const { dataDir, cli, removeDirs } = clusterDirs('fixloop-intake-deadlock-', () => env)

beforeAll(async () => {
  env = {
    ...(await clusterEnv()),
    FIXLOOP_LOG_LEVEL: 'warn',
    FIXLOOP_NODE_LEASE_SECONDS: '5',
    // Each request names its own client address; the limits are not what this file tests.
    FIXLOOP_TRUST_PROXY: '1',
    FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000',
  }
  pool = openPool(env.FIXLOOP_DATABASE_URL, 2)
  for (let o = 0; o < 4; o++) {
    const org = await cli(['org', 'create', '--name', `Tenant ${o}`])
    apps.push((await cli(['app', 'create', '--org', org.id, '--name', 'Web'])).publicKey)
  }
  nodes.push(...(await Promise.all([spawnLoggedServer(dataDir(), env), spawnLoggedServer(dataDir(), env)])))
}, 60_000)

let logs: string[] = []
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop()))
  await pool?.end()
  removeDirs()
})

/** POSTs a keyed report; its status, and its error code and Retry-After when refused. */
async function submit(node: Node, publicKey: string, key: string, text: string, address: string): Promise<{ status: number; refusal?: string }> {
  const r = await fetch(`${node.url}/v1/feedback`, {
    method: 'POST',
    headers: { authorization: `Bearer ${publicKey}`, 'content-type': 'application/json', 'x-forwarded-for': address, 'idempotency-key': key },
    body: JSON.stringify({ text }),
  })
  const body = (await r.json()) as { error?: { code: string } }
  return { status: r.status, refusal: r.status === 201 ? undefined : `${r.status} ${body.error?.code} retry-after=${r.headers.get('retry-after')}` }
}

function tally(refusals: (string | undefined)[]): Record<string, number> {
  const out: Record<string, number> = {}
  for (const r of refusals) if (r) out[r] = (out[r] ?? 0) + 1
  return out
}

/** PostgreSQL's own count of the deadlocks it broke in this database (its backends report it, at the latest when they exit). */
async function deadlocks(): Promise<number> {
  const { rows } = await pool.query<{ n: string }>('SELECT deadlocks AS n FROM pg_stat_database WHERE datname = current_database()')
  return Number(rows[0].n)
}
let deadlocksBefore = 0

describe('keyed submissions on two nodes over one PostgreSQL', () => {
  test('four Orgs, each report to either node: every one 201, none waits on a deadlock', async () => {
    deadlocksBefore = await deadlocks()
    const COUNT = 600
    const refusals: (string | undefined)[] = []
    let next = 0
    const t0 = Date.now()
    await Promise.all(
      Array.from({ length: 24 }, async () => {
        while (next < COUNT && Date.now() - t0 < 40_000) {
          const i = next++
          // The Orgs interleave differently on the two nodes, so their batches name them in different orders.
          const r = await submit(nodes[i % 2], apps[(i * 7 + (i >> 3)) % apps.length], `multi-${i}`, `Report ${i}: the export button fails`, `10.9.${(i >> 8) & 255}.${i & 255}`)
          refusals.push(r.refusal)
        }
      }),
    )
    expect(tally(refusals)).toEqual({})
    expect(refusals).toHaveLength(COUNT)
    const { rows } = await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM feedback WHERE text LIKE 'Report %: the export button fails'")
    expect(rows[0].n).toBe(COUNT)
    // Whether a deadlock was broken (each costs its two batches PostgreSQL's deadlock_timeout, 1 s) is read
    // from PostgreSQL's own count once the nodes have stopped (below), not guessed from slow answers: a
    // loaded machine answers slowly without any deadlock.
  }, 60_000)

  test('the same keys sent to both nodes at once in opposite orders: one report per key, every answer 201', async () => {
    const refusals: (string | undefined)[] = []
    for (let round = 0; round < 8; round++) {
      const keys = Array.from({ length: 20 }, (_, k) => `order-${round}-${k}`)
      const send = (node: Node, key: string) => submit(node, apps[0], key, `Keyed report ${key}: the export button fails`, '203.0.113.7')
      const answers = await Promise.all([...keys.map((k) => send(nodes[0], k)), ...[...keys].reverse().map((k) => send(nodes[1], k))])
      refusals.push(...answers.map((a) => a.refusal))
    }
    expect(tally(refusals)).toEqual({})
    const { rows } = await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM feedback WHERE text LIKE 'Keyed report order-%'")
    expect(rows[0].n).toBe(8 * 20)
  }, 60_000)

  test('no node logged a deadlock, and PostgreSQL broke none', async () => {
    logs = await Promise.all(nodes.map((n) => n.stop()))
    expect(logs.join('\n').split('\n').filter((l) => l.includes('deadlock detected'))).toEqual([])
    // The nodes' connections have ended: each backend reported its counts on the way out.
    await Bun.sleep(200)
    expect((await deadlocks()) - deadlocksBefore).toBe(0)
  }, 30_000)
})
