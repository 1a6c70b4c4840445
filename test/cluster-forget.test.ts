/**
 * What one node of a cluster learns, every node learns (docs/operations.md "What one node learns, every
 * node learns"):
 * - reports removed for good (a reporter's erasure, the report retention) leave the similarity index and
 *   the text cache of every node, not only the one that removed them (src/nodes/removal-follower.ts): the
 *   node clustering the App kept the erased reports' sanitized text and ranked new reports against them;
 * - a report a person marked spam on one node makes its rewordings `like_spam` on every node
 *   (src/abuse/spam-share.ts): a bot spreading its rewordings over the nodes escaped on all but one.
 * Both are announced on the wake-up channel and read from the database (a removal log, the App's marks),
 * with a safety poll for a lost message: the Redis-down cases show the poll alone carries them.
 *
 * Two compiled `fixloop serve` nodes on one PostgreSQL and a redis-server of this file's own
 * (test/cluster-env.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Pool } from 'pg'
import { call, eventually, spawnServer } from './harness'
import { clusterDirs } from './cluster-cli'
import { clusterEnv, startRedis, type RedisServer } from './cluster-env'
import { openPool } from '../src/db/pg/client-options'
import { PARTITION_OF_APP } from '../src/db/pg/jobs'
import { powHeaderOf, solvePowChallenge } from '../src/abuse/pow'
import { REMOVAL_POLL_MS } from '../src/nodes/removal-follower'
import { SPAM_SHARE_POLL_MS } from '../src/abuse/spam-share'

type Node = Awaited<ReturnType<typeof spawnServer>>

let redis: RedisServer
let env: Record<string, string>
let pool: Pool
const nodes: Node[] = []
const { dataDir, cli, removeDirs } = clusterDirs('fixloop-cluster-forget-', () => env)

beforeAll(async () => {
  redis = await startRedis()
  env = { ...(await clusterEnv(undefined, { migrated: true })), FIXLOOP_REDIS_URL: redis.url, FIXLOOP_NODE_LEASE_SECONDS: '5', FIXLOOP_TRUST_PROXY: '1', FIXLOOP_LOG_LEVEL: 'warn' }
  pool = openPool(env.FIXLOOP_DATABASE_URL, 1)
  for (let i = 0; i < 2; i++) nodes.push(await spawnServer(dataDir(), env))
}, 60_000)

afterAll(async () => {
  await pool?.end()
  for (const n of nodes) await n.stop()
  await redis?.stop()
  removeDirs()
})

async function tenant(name: string, extra: string[] = []): Promise<{ orgId: string; key: string; appId: string; pub: string }> {
  const org = await cli(['org', 'create', '--name', name])
  const key = await cli(['key', 'create', '--org', org.id])
  const app = await cli(['app', 'create', '--org', org.id, '--name', name, ...extra])
  return { orgId: org.id, key: key.key, appId: app.id, pub: app.publicKey }
}

/** The node holding the App's partition (it clusters the App), and the other one, once the partitions are spread. */
async function roles(appId: string): Promise<{ clustering: Node; other: Node }> {
  const partition = (await pool.query<{ p: number }>(`SELECT ${PARTITION_OF_APP('$1::text')} AS p`, [appId])).rows[0].p
  return eventually(async () => {
    const held = await Promise.all(
      nodes.map(async (n) => {
        const r = await call(n.url, 'GET', '/readyz')
        const checks = r.status === 200 ? r.body.checks : r.body.error?.details?.checks
        return (checks?.node?.partitions ?? []) as number[]
      }),
    )
    if (held.flat().length !== 16 || held.some((p) => p.length === 0)) return undefined
    const i = held.findIndex((p) => p.includes(partition))
    return i === -1 ? undefined : { clustering: nodes[i], other: nodes[1 - i] }
  }, 30_000)
}

describe('erased reports leave every node', () => {
  const TEXT = 'Exporting the invoice as PDF hangs forever with a spinner after clicking the download button in the billing page'
  /** The survivor's words: the same bug, a few more words (ranked just below the exact copies). */
  const SURVIVOR = TEXT.replace('billing page', 'billing screen')
  /** More exact copies than a verdict's shortlist holds (clusterer.ts RESCORE + 1). */
  const COPIES = 20
  let sent = 0

  /**
   * One reporter's COPIES reports of the bug and another reporter's rewording, all clustered by the node
   * holding the App's partition; `erase` erases the first reporter on the other node. Then a new exact copy:
   * the clustering node must rank it against the survivor, which it can only if the erased copies left its
   * index (they filled its shortlist: their texts in its cache, their rows gone, so no candidate was left).
   */
  async function erasureCase(name: string, erase: (eraser: Node, t: Awaited<ReturnType<typeof tenant>>) => Promise<void>) {
    const t = await tenant(name)
    const { clustering, other } = await roles(t.appId)
    const submit = async (text: string, email: string) => {
      const r = await call(other.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text, identity: { email } }, headers: { 'x-forwarded-for': `10.9.${(sent >> 8) & 255}.${sent++ & 255}` } })
      expect(r.status).toBe(201)
      return r.body.id as string
    }
    const leadOf = async (id: string) => {
      const row = await eventually(async () => {
        const r = (await call(clustering.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })).body
        return r && r.status !== 'received' && r.status !== 'sanitizing' ? r : undefined
      }, 30_000)
      return row.duplicateOfId as string | null
    }
    const lead = await submit(TEXT, 'erin@example.com')
    expect(await leadOf(lead)).toBeNull()
    const survivor = await submit(SURVIVOR, 'dan@example.com')
    const copies: string[] = []
    for (let i = 1; i < COPIES; i++) copies.push(await submit(TEXT, 'erin@example.com'))
    // The premise: all merged into the lead automatically, by the clustering node's index.
    expect(await leadOf(survivor)).toBe(lead)
    for (const id of copies) expect(await leadOf(id)).toBe(lead)
    await erase(other, t)
    expect((await pool.query('SELECT id FROM feedback WHERE id = ANY($1::text[])', [[lead, ...copies]])).rows).toEqual([])
    expect((await pool.query<{ d: string | null }>('SELECT duplicate_of_id AS d FROM feedback WHERE id = $1', [survivor])).rows).toEqual([{ d: null }])
    return { survivor, next: async () => leadOf(await submit(TEXT, 'nina@example.com')) }
  }

  const eraseErin = async (eraser: Node, t: { key: string }) => {
    const r = await call(eraser.url, 'POST', '/v1/reporters/erase', { auth: t.key, body: { email: 'erin@example.com' } })
    expect(r.body).toEqual({ erased: COPIES })
  }

  test('an erasure on one node: the node clustering the App drops the erased reports (the next report of the bug joins the survivor)', async () => {
    const { survivor, next } = await erasureCase('Erased', eraseErin)
    // Before: the clustering node still held the erased copies (their texts, their links) and ranked the
    // next report against them only: a lead of its own instead of the survivor's duplicate. One report
    // only (a second would join the first), sent once the wake-up surely arrived (it takes milliseconds:
    // a second leaves room for a loaded machine).
    await Bun.sleep(1_000)
    expect(await next()).toBe(survivor)
  }, 120_000)

  test('with Redis away the removal still reaches the clustering node (its safety poll reads the removal log)', async () => {
    let halted = false
    try {
      const { survivor, next } = await erasureCase('Erased offline', async (eraser, t) => {
        await redis.halt()
        halted = true
        await eraseErin(eraser, t)
      })
      // No wake-up: the clustering node reads the log at its next safety poll (every 2 s).
      await Bun.sleep(2 * REMOVAL_POLL_MS + 1_000)
      expect(await next()).toBe(survivor)
    } finally {
      if (halted) await redis.restart()
    }
  }, 120_000)
})

describe('like_spam across nodes', () => {
  const PITCH = 'Boost your website traffic today! Our SEO services put your site on the first page of Google. Visit https://rank-boost.example/offer?ref=6864 for a free audit.'
  /**
   * The pitch reworded, a new variant each call (another word, another linked site): the same text, or the
   * same site, from 4 or more addresses fires repeated_text or link_flood, and a report already spam
   * without like_spam is not compared (a test waiting for like_spam with one text waited in vain).
   */
  let variant = 0
  const reworded = () => {
    const w = 'abcdefghijklmnopqrstuvwxyz'[variant % 26] + 'abcdefghijklmnopqrstuvwxyz'[Math.floor(variant / 26) % 26]
    variant++
    return `Want more visitors to your website? Our SEO services will get your site onto Google first page. Free audit at https://seo-${w}.example/free today, ${w}!`
  }

  /** A report from a script at `node`: proof of work solved, no widget signals (no_widget_signals fires). */
  async function scripted(node: Node, pub: string, text: string, address: string): Promise<string> {
    const headers = { 'x-forwarded-for': address }
    const c = (await call(node.url, 'GET', '/v1/widget/challenge', { auth: pub, headers })).body.challenge
    const r = await call(node.url, 'POST', '/v1/feedback', { auth: pub, body: { text }, headers: { ...headers, 'X-Fixloop-Proof-Of-Work': powHeaderOf(c, solvePowChallenge(c)!) } })
    expect(r.status).toBe(201)
    return r.body.id as string
  }

  test('a pitch marked spam on node A makes its rewording from a script spam on node B (like_spam); "not spam" on that rewording at A clears it on both nodes', async () => {
    const [a, b] = nodes
    const t = await tenant('Pitched', ['--proof-of-work', 'normal'])
    const spamOf = async (id: string) => (await call(a.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })).body.spam as { reasons: string[] } | null
    const pitch = await scripted(a, t.pub, PITCH, '198.51.100.1')
    expect(await spamOf(pitch)).toBeNull()
    expect((await call(a.url, 'PATCH', `/v1/feedback/${pitch}`, { auth: t.key, body: { spam: true } })).status).toBe(200)
    // Node A at once (its own ring); node B once it heard of the mark (before: never).
    const atA = await scripted(a, t.pub, reworded(), '198.51.100.2')
    expect((await spamOf(atA))?.reasons).toContain('like_spam')
    let n = 3
    const atB = await eventually(async () => {
      const id = await scripted(b, t.pub, reworded(), `198.51.100.${n++}`)
      return (await spamOf(id))?.reasons.includes('like_spam') ? id : (await Bun.sleep(200), undefined)
    }, 10_000)
    expect((await spamOf(atB))?.reasons).toEqual(['no_widget_signals', 'like_spam', 'spam_phrases'])

    // "Not spam" on the rewording, at node A: the pitch it resembles no longer makes it like_spam, on node A
    // (its ring drops what the text resembles) and on node B, though the pitch itself is still marked spam.
    // Before, each node loaded the pitch's mark again from the database.
    expect((await call(a.url, 'PATCH', `/v1/feedback/${atB}`, { auth: t.key, body: { spam: false } })).status).toBe(200)
    await Bun.sleep(2 * SPAM_SHARE_POLL_MS + 1_000) // the wake-up and a safety poll on both nodes: nothing may bring it back
    for (const node of [a, b]) expect(await spamOf(await scripted(node, t.pub, reworded(), `198.51.100.${n++}`))).toBeNull()
    expect((await spamOf(pitch))?.reasons).toContain('marked_by_hand')
  }, 90_000)

  test('with Redis away a mark on node A still reaches node B (its safety poll reads the marks)', async () => {
    const [a, b] = nodes
    const t = await tenant('Pitched offline', ['--proof-of-work', 'normal'])
    const spamOf = async (id: string) => (await call(a.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })).body.spam as { reasons: string[] } | null
    const pitch = await scripted(a, t.pub, PITCH, '198.51.100.101')
    await redis.halt()
    try {
      expect((await call(a.url, 'PATCH', `/v1/feedback/${pitch}`, { auth: t.key, body: { spam: true } })).status).toBe(200)
      let n = 102
      await eventually(async () => {
        const id = await scripted(b, t.pub, reworded(), `198.51.100.${n++}`)
        return (await spamOf(id))?.reasons.includes('like_spam') ? id : (await Bun.sleep(500), undefined)
      }, 20_000)
    } finally {
      await redis.restart()
    }
  }, 90_000)
})
