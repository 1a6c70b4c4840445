/**
 * Concurrent customer moves (PATCH /v1/feedback/:id) against one server and against two server
 * processes sharing one data dir: never a 5xx, every answer is 200 or a 409 the spec names, and the
 * stored row is explained exactly by the moves that were acknowledged.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { canCustomerMove, type CustomerTarget, type FeedbackStatus } from '../src/core/fsm'
import { eventually, seedTenant, spawnServer, startTestServer, tempDir, type Reply, type Tenant, type TestServer } from './harness'
import { cliTenant, ensureBinary, feedbackRow, openDataDb, patchStatus, submit } from './helpers-lifecycle'
import type { Database } from 'bun:sqlite'
import { sqliteOf } from './sqlite-of'

interface Attempt {
  id: string
  to: CustomerTarget
  reply: Reply
}

/** A fixed pseudo-random mix, so a failure can be replayed. */
function mix(n: number, seed: number): CustomerTarget[] {
  let s = seed
  return Array.from({ length: n }, () => {
    s = (s * 1103515245 + 12345) & 0x7fffffff
    return s % 3 === 0 ? 'archived' : 'queued'
  })
}

function permutations<T>(items: T[]): T[][] {
  if (items.length <= 1) return [items]
  return items.flatMap((x, i) => permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((p) => [x, ...p]))
}

/**
 * Checks one item: every reply is 200 or 409 invalid_transition/concurrent_update; the version grew by
 * exactly the number of 200s; some order of the acknowledged moves is a legal chain from the initial
 * status to the final one; every invalid_transition names a status the item really passed through.
 */
function expectConsistent(initial: { status: FeedbackStatus; version: number }, attempts: Attempt[], final: { status: string; version: number }): void {
  const fivexx = attempts.filter((a) => a.reply.status >= 500)
  expect(fivexx.map((a) => a.reply.text)).toEqual([])
  const ok: CustomerTarget[] = []
  const refusals: { from: FeedbackStatus; to: CustomerTarget }[] = []
  for (const a of attempts) {
    if (a.reply.status === 200) {
      expect(a.reply.body).toEqual({ id: a.id, status: a.to })
      ok.push(a.to)
    } else {
      expect(a.reply.status).toBe(409)
      expect(['invalid_transition', 'concurrent_update']).toContain(a.reply.body.error.code)
      if (a.reply.body.error.code === 'invalid_transition') {
        expect(a.reply.body.error.details.to).toBe(a.to)
        refusals.push(a.reply.body.error.details)
      }
    }
  }
  expect(ok.length).toBeGreaterThan(0)
  expect(final.version).toBe(initial.version + ok.length)
  const chains = permutations(ok).filter((order) => {
    let at: FeedbackStatus = initial.status
    for (const to of order) {
      if (!canCustomerMove(at, to)) return false
      at = to
    }
    return at === final.status
  })
  expect(chains.length).toBeGreaterThan(0)
  const visited = new Set<string>([initial.status, ...ok])
  for (const r of refusals) {
    expect(visited.has(r.from)).toBe(true)
    expect(canCustomerMove(r.from, r.to)).toBe(false)
  }
}

describe('one server', () => {
  let srv: TestServer
  let t: Tenant

  beforeAll(async () => {
    srv = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
    t = await seedTenant(srv.admin)
  })
  afterAll(() => srv.close())

  let made = 0
  async function readyItem(): Promise<string> {
    // A number of its own in each text: identical texts would be clustered as duplicates of one lead.
    const r = await submit(srv.url, t.pub, { text: `Case ${++made}: the total is wrong` })
    await eventually(() => feedbackRow(sqliteOf(srv.ctx), r.body.id).status === 'awaiting_manual')
    return r.body.id
  }

  test('50 concurrent PATCHes on one item', async () => {
    const id = await readyItem()
    const initial = feedbackRow(sqliteOf(srv.ctx), id)
    const targets = mix(50, 7)
    expect(new Set(targets).size).toBe(2)
    const attempts = await Promise.all(targets.map(async (to) => ({ id, to, reply: await patchStatus(srv.url, t.key, id, to) })))
    expectConsistent(initial as never, attempts, feedbackRow(sqliteOf(srv.ctx), id))
  })

  test('50 concurrent PATCHes spread over five items', async () => {
    const ids = await Promise.all(Array.from({ length: 5 }, () => readyItem()))
    const initial = new Map(ids.map((id) => [id, feedbackRow(sqliteOf(srv.ctx), id)]))
    const targets = mix(50, 42)
    const attempts = await Promise.all(targets.map(async (to, i) => ({ id: ids[i % 5], to, reply: await patchStatus(srv.url, t.key, ids[i % 5], to) })))
    for (const id of ids) {
      expectConsistent(initial.get(id) as never, attempts.filter((a) => a.id === id), feedbackRow(sqliteOf(srv.ctx), id))
    }
  })

  test('archiving while the worker processes: every archive sticks and no job is left', async () => {
    const ids: string[] = []
    const replies = await Promise.all(
      Array.from({ length: 30 }, async (_, i) => {
        const r = await submit(srv.url, t.pub, { text: `race ${i}, mail me: racer${i}@example.com` })
        ids.push(r.body.id)
        // Half are archived at once (racing the worker), half a moment later.
        if (i % 2) await Bun.sleep(2)
        return { id: r.body.id, to: 'archived' as const, reply: await patchStatus(srv.url, t.key, r.body.id, 'archived') }
      }),
    )
    for (const a of replies) {
      expect(a.reply.status === 200 || (a.reply.status === 409 && a.reply.body.error.code === 'concurrent_update')).toBe(true)
    }
    const archived = new Set(replies.filter((a) => a.reply.status === 200).map((a) => a.id))
    await eventually(() => ids.every((id) => (sqliteOf(srv.ctx).query('SELECT COUNT(*) AS n FROM jobs WHERE feedback_id = ?').get(id) as { n: number }).n === 0))
    for (const id of ids) {
      const row = feedbackRow(sqliteOf(srv.ctx), id)
      if (archived.has(id)) expect(row.status).toBe('archived')
      else expect(row.status).toBe('awaiting_manual')
    }
  })
})

/**
 * Issue 17: a second server on a data dir is refused (test/startup-guards.test.ts), so the two "servers"
 * here are one process reached twice; the concurrent writes still race inside SQLite and the worker.
 */
describe('concurrent writers on one data dir', () => {
  let dir: string
  let a: Awaited<ReturnType<typeof spawnServer>>
  let b: Awaited<ReturnType<typeof spawnServer>>
  let t: Awaited<ReturnType<typeof cliTenant>>
  let db: Database

  beforeAll(async () => {
    ensureBinary()
    dir = tempDir('fixloop-two-')
    t = await cliTenant(dir)
    const env = { FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' }
    a = await spawnServer(dir, env)
    // The second start is refused while the first holds the data dir.
    await expect(spawnServer(dir, env)).rejects.toThrow('exited with 2')
    b = a
    db = openDataDb(dir)
  })
  afterAll(async () => {
    db?.close()
    await a?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  const row = (id: string) => feedbackRow(db, id)

  test('each report is processed exactly once', async () => {
    const ids = await Promise.all(
      Array.from({ length: 60 }, async (_, i) => (await submit(i % 2 ? a.url : b.url, t.pub, { text: `twice ${i}? x${i}@example.com` })).body.id as string),
    )
    await eventually(() => ids.every((id) => row(id).status === 'awaiting_manual'), 10_000)
    for (const id of ids) {
      const r = row(id)
      // received → sanitizing → sanitized → clustered (theme, consolidatedText) → awaiting_manual:
      // four writes, not more — a second worker processing it again would add more.
      expect(r.version).toBe(4)
      expect(JSON.parse(r.redactions as string)).toEqual({ email: 1 })
    }
  }, 15_000)

  test('50 concurrent PATCHes on one item through both servers', async () => {
    const r = await submit(a.url, t.pub, { text: 'shared item' })
    const id = r.body.id
    await eventually(() => row(id).status === 'awaiting_manual', 5000)
    const initial = row(id)
    const targets = mix(50, 3)
    const attempts = await Promise.all(targets.map(async (to, i) => ({ id, to, reply: await patchStatus(i % 2 ? a.url : b.url, t.key, id, to) })))
    expectConsistent(initial as never, attempts, row(id))
  })

  test('50 concurrent PATCHes on five items through both servers', async () => {
    const ids = await Promise.all(Array.from({ length: 5 }, async (_, i) => (await submit(i % 2 ? a.url : b.url, t.pub, { text: `item ${i}` })).body.id as string))
    await eventually(() => ids.every((id) => row(id).status === 'awaiting_manual'), 5000)
    const initial = new Map(ids.map((id) => [id, row(id)]))
    const targets = mix(50, 11)
    const attempts = await Promise.all(
      targets.map(async (to, i) => ({ id: ids[i % 5], to, reply: await patchStatus(i % 3 ? a.url : b.url, t.key, ids[i % 5], to) })),
    )
    for (const id of ids) expectConsistent(initial.get(id) as never, attempts.filter((x) => x.id === id), row(id))
  })
})
