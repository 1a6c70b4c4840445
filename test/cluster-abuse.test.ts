/**
 * The abuse defence across the nodes of a cluster (docs/widget.md "Abuse defence: the server side"): the
 * report budget and the flood meters of the proof of work, and the spam signals `address_flood`,
 * `repeated_text` and `link_flood`, count the reports of every node, so an address key (or a bot's set of
 * addresses) that spread its reports over N nodes no longer got N times as many before they counted. Each
 * node answers from memory (src/abuse/shared-flood-meter.ts, shared-repeat-tracker.ts) and learns the
 * others' counts within a second or two; with Redis away a node counts alone, and intake never waits on
 * Redis or fails for it.
 *
 * Two compiled `fixloop serve` nodes on one PostgreSQL and a redis-server of this file's own
 * (test/cluster-env.ts); FIXLOOP_TRUST_PROXY=1, so each case names its client address.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Pool } from 'pg'
import { RedisClient } from 'bun'
import { openPool } from '../src/db/pg/client-options'
import { call, eventually, spawnServer } from './harness'
import { clusterDirs } from './cluster-cli'
import { clusterEnv, startRedis, type RedisServer } from './cluster-env'
import { powHeaderOf, solvePowChallenge } from '../src/abuse/pow'
import { POW_MAXNUMBER } from '../src/abuse/difficulty'

type Node = Awaited<ReturnType<typeof spawnServer>>

let redis: RedisServer
let env: Record<string, string>
const nodes: Node[] = []
let app: { id: string; publicKey: string }
let pool: Pool
const { dataDir, cli, removeDirs } = clusterDirs('fixloop-cluster-abuse-', () => env)

beforeAll(async () => {
  redis = await startRedis()
  env = { ...(await clusterEnv(undefined, { migrated: true })), FIXLOOP_REDIS_URL: redis.url, FIXLOOP_NODE_LEASE_SECONDS: '5', FIXLOOP_TRUST_PROXY: '1' }
  const org = await cli(['org', 'create', '--name', 'Acme'])
  app = await cli(['app', 'create', '--org', org.id, '--name', 'Guarded', '--proof-of-work', 'normal'])
  for (let i = 0; i < 2; i++) nodes.push(await spawnServer(dataDir(), env))
  pool = openPool(env.FIXLOOP_DATABASE_URL, 1)
}, 60_000)

afterAll(async () => {
  await pool?.end()
  for (const n of nodes) await n.stop()
  await redis?.stop()
  removeDirs()
})

/** The sizes of the repeat tracker's sets of an App in Redis (`fixloop:rt:<App id>:t:…` and `…:l:…`). */
async function repeatSets(appId: string): Promise<{ key: string; size: number }[]> {
  const client = new RedisClient(redis.url)
  try {
    const keys = (await client.send('KEYS', [`fixloop:rt:${appId}:*`])) as string[]
    return await Promise.all(keys.map(async (key) => ({ key, size: Number(await client.send('ZCARD', [key])) })))
  } finally {
    client.close()
  }
}

let markers = 0
/**
 * Waits until node B has read back the counts of `appId`'s repeat sets after both nodes' addresses reached
 * Redis (its largest text set `texts` members, its largest site set `sites`): then two reports at B (another
 * App, a text of their own) each seen pushed in turn. B's tick pushes, then reads back, and its next tick
 * starts after it ended: the tick that pushed the first began after the sets were full, and had read them
 * back before the tick that pushed the second.
 */
async function heardAtB(appId: string, texts: number, sites: number): Promise<void> {
  const largest = (sets: { key: string; size: number }[], kind: string) => Math.max(0, ...sets.filter((x) => x.key.includes(`:${kind}:`)).map((x) => x.size))
  await eventually(async () => {
    const sets = await repeatSets(appId)
    return (largest(sets, 't') >= texts && largest(sets, 'l') >= sites) || (await Bun.sleep(100), false)
  }, 20_000)
  for (let i = 0; i < 2; i++) {
    const before = (await repeatSets(app.id)).length
    const word = ['kiwi', 'mango', 'papaya', 'quince', 'guava', 'lychee'][markers++ % 6]
    expect(await report(nodes[1], `198.18.0.${markers}`, `a marker report about the ${word} page layout`)).toBe(201)
    await eventually(async () => (await repeatSets(app.id)).length > before || (await Bun.sleep(100), false), 20_000)
  }
}

/** The maxnumber a challenge from `address` at `node` asks for now. */
async function difficultyAt(node: Node, address: string): Promise<number> {
  const r = await call(node.url, 'GET', '/v1/widget/challenge', { auth: app.publicKey, headers: { 'x-forwarded-for': address } })
  expect(r.status).toBe(200)
  return r.body.challenge.maxnumber
}

/**
 * A report from `address` at `node` (to `to`, the App unless told), with the proof of work its challenge
 * there asks for: the status. As the widget does, a challenge that became too easy meanwhile (the other
 * node's reports heard of while solving) is solved again at the new difficulty.
 */
async function report(node: Node, address: string, text: string, to: { publicKey: string } = app): Promise<number> {
  const headers = { 'x-forwarded-for': address }
  for (let attempt = 0; ; attempt++) {
    const { challenge } = (await call(node.url, 'GET', '/v1/widget/challenge', { auth: to.publicKey, headers })).body
    const r = await call(node.url, 'POST', '/v1/feedback', { auth: to.publicKey, body: { text }, headers: { ...headers, 'X-Fixloop-Proof-Of-Work': powHeaderOf(challenge, solvePowChallenge(challenge)!) } })
    if (r.body?.error?.details?.reason !== 'too_easy' || attempt === 2) return r.status
  }
}

describe('the abuse defence counts every node', () => {
  test("an address's 11 reports at one node raise its difficulty at the other node too (the report budget: x2 and more)", async () => {
    const [a, b] = nodes
    expect(await difficultyAt(b, '203.0.113.60')).toBe(POW_MAXNUMBER.normal)
    // 11 (the 12th then costs x4), not 10: an hour's window ending mid-test counts the 10 as just under 10.
    for (let i = 0; i < 11; i++) expect(await report(a, '203.0.113.60', `the export button does nothing, try ${i}`)).toBe(201)
    expect(await difficultyAt(a, '203.0.113.60')).toBeGreaterThanOrEqual(2 * POW_MAXNUMBER.normal)
    // Node B heard of them within a refresh or two; before, it kept asking the App's own level.
    // Asked every 200 ms: the challenges' own rate limit (120 a minute per address) is not what is tested.
    await eventually(async () => (await difficultyAt(b, '203.0.113.60')) >= 2 * POW_MAXNUMBER.normal || (await Bun.sleep(200), false), 10_000)
    // Another address is not affected.
    expect(await difficultyAt(b, '203.0.113.61')).toBe(POW_MAXNUMBER.normal)
  }, 60_000)

  test("the spam signal address_flood counts an address's reports at every node (more than 10 a minute)", async () => {
    const [a, b] = nodes
    const org = await cli(['org', 'create', '--name', 'Flooded'])
    const flooded = await cli(['app', 'create', '--org', org.id, '--name', 'Flooded', '--proof-of-work', 'normal'])
    // Scored without address_flood: a spam phrase (0.30) and no widget signals (0.15), and from the 11th on
    // a raised proof of work (0.15): 0.60 at most, not spam. With it (0.45) it is.
    for (let i = 0; i < 11; i++) expect(await report(i % 2 === 0 ? a : b, '198.51.100.80', `online casino bonus number ${i} for you`, flooded)).toBe(201)
    // Node B has heard of node A's 6 (its own 5 and A's 6 in its report budget: x4), and so of A's 6 in the same
    // meter's minute count, pushed and read back with them; its 6th is then the address's 12th of the minute.
    // Asked, not slept: a fixed 2.5 s for a push and a read back a second apart each was short on a loaded machine.
    const budgetAtB = async () => (await call(b.url, 'GET', '/v1/widget/challenge', { auth: flooded.publicKey, headers: { 'x-forwarded-for': '198.51.100.80' } })).body.challenge.maxnumber as number
    await eventually(async () => (await budgetAtB()) >= 4 * POW_MAXNUMBER.normal || (await Bun.sleep(200), false), 20_000)
    expect(await report(b, '198.51.100.80', 'online casino bonus number 11 for you', flooded)).toBe(201)
    const rows = await pool.query<{ spam_reasons: string | null }>('SELECT spam_reasons FROM feedback WHERE app_id = $1', [flooded.id])
    expect(rows.rows).toHaveLength(12)
    // Each node saw 6 of them: counting alone, neither ever saw more than 10 in a minute.
    expect(rows.rows.some((r) => (r.spam_reasons ?? '').includes('address_flood'))).toBe(true)
  }, 60_000)

  test("a counter another writer gave another type (WRONGTYPE) costs that key's shared count only: every report 201, the other addresses still shared", async () => {
    const [a, b] = nodes
    const hour = 3_600_000
    const start = Math.floor(Date.now() / hour) * hour
    const admin = new RedisClient(redis.url)
    try {
      // This hour's and the next one's (the test may cross it): a list where a counter would be.
      for (const s of [start, start + hour]) await admin.send('RPUSH', [`fixloop:fm:budget:${s}:${app.id}|198.51.100.90`, 'not a counter'])
      for (let i = 0; i < 11; i++) {
        if (i < 6) expect(await report(a, '198.51.100.90', `the poisoned address reports, try ${i}`)).toBe(201)
        expect(await report(a, '198.51.100.91', `the other address reports, try ${i}`)).toBe(201)
      }
      await eventually(async () => (await difficultyAt(b, '198.51.100.91')) >= 2 * POW_MAXNUMBER.normal || (await Bun.sleep(200), false), 10_000)
      expect(await admin.send('TYPE', [`fixloop:fm:budget:${start}:${app.id}|198.51.100.90`])).toBe('list')
    } finally {
      admin.close()
    }
  }, 60_000)

  test('repeated_text and link_flood count the addresses of every node', async () => {
    const [a, b] = nodes
    const org = await cli(['org', 'create', '--name', 'Repeated'])
    const target = await cli(['app', 'create', '--org', org.id, '--name', 'Repeated', '--proof-of-work', 'normal'])
    const reasonsOf = async (text: string) => (await pool.query<{ spam_reasons: string | null }>('SELECT spam_reasons FROM feedback WHERE app_id = $1 AND text = $2', [target.id, text])).rows[0]?.spam_reasons ?? ''
    // Scored without the signal: a spam phrase (0.30) and no widget signals (0.15), not spam. With
    // repeated_text (0.45) or link_flood (0.30) it is.
    const same = 'online casino spins for everyone who reads this'
    for (const [node, address] of [[a, '192.0.2.1'], [a, '192.0.2.2'], [b, '192.0.2.3'], [b, '192.0.2.4']] as const) expect(await report(node, address, same, target)).toBe(201)
    const links = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india'].map((w) => `online casino ${w} offer at https://spam-site.example/${w}`)
    for (let i = 0; i < 8; i++) expect(await report(i < 4 ? a : b, `192.0.2.${10 + i}`, links[i], target)).toBe(201)
    // Node B heard of node A's addresses within a second or two: the next one at B is the 5th and the 9th.
    // Seen, not slept (a fixed 2.5 s for a push and a read back a second apart each was short on a loaded
    // machine): both nodes' addresses in Redis, then two of B's pushes after that (heardAtB).
    await heardAtB(target.id, 4, 8)
    expect(await report(b, '192.0.2.5', same, target)).toBe(201)
    expect(await report(b, '192.0.2.30', links[8], target)).toBe(201)
    // Each node saw at most 3 senders of the text and 5 linkers of the site: counting alone, neither fired.
    const sameRows = (await pool.query<{ spam_reasons: string | null }>('SELECT spam_reasons FROM feedback WHERE app_id = $1 AND text = $2', [target.id, same])).rows
    expect(sameRows).toHaveLength(5)
    expect(sameRows.filter((r) => (r.spam_reasons ?? '').includes('repeated_text')).length).toBeGreaterThanOrEqual(1)
    expect(await reasonsOf(links[8])).toContain('link_flood')
  }, 60_000)

  test('Redis down: reports and challenges still answer at once on both nodes (the meters count from memory)', async () => {
    const [a, b] = nodes
    await redis.halt()
    try {
      for (const n of [a, b]) {
        const t0 = performance.now()
        expect(await report(n, '203.0.113.70', 'the page is blank after saving')).toBe(201)
        expect(performance.now() - t0).toBeLessThan(3_000)
      }
      // Each node still counts its own: the address's earlier reports keep their price on node A.
      expect(await difficultyAt(a, '203.0.113.60')).toBeGreaterThanOrEqual(2 * POW_MAXNUMBER.normal)
    } finally {
      await redis.restart()
    }
  }, 60_000)
})
