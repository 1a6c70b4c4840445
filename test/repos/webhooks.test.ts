/** modules/webhooks/repo.ts on both dialects: changes with their audit rows, fan-out, claims (a race of two pools on PostgreSQL), settles. */
import { describe, expect, test } from 'bun:test'
import { storeOf } from '../dialects'
import { describeEachDialect, freshStore, type FreshStore } from '../dialects'
import { type AttemptOutcome, type WebhooksRepo } from '../../src/modules/webhooks/repo'
import type { AuditEntry } from '../../src/modules/audit/entry'
import { openPool } from '../../src/db/pg/client-options'
import { pgStorage } from '../../src/db/pg/storage'
import { seedOrgApp, sql } from './store-fixtures'

const by = (action: string, targetId: string): AuditEntry => ({ orgId: 'o1', actor: 'cli', action, targetId, data: {} })

async function newHook(s: FreshStore, repo: WebhooksRepo, id = 'w1', orgId = 'o1', eventTypes = '[]') {
  await repo.insert({ id, orgId, appId: null, url: 'https://example.com/hook', eventTypes, secretSealed: 'sealed', createdAt: s.clock.now() }, [by('webhook.created', id)])
}

const record = (s: FreshStore, orgId = 'o1') => s.store.lifecycle.record({ orgId, appId: null }, 'webhook.test', { webhookId: 'other' })

let n = 0
const ids = () => `d${String(++n).padStart(6, '0')}`
const everything = () => true
/** No Org at its share of the pool: nothing left out of these claims. */
const OPEN: string[] = []

function outcome(d: { id: string; attempts: number; schedule_index: number }, kind: AttemptOutcome['kind'], now: number, extra: Partial<AttemptOutcome> = {}): AttemptOutcome {
  return {
    attempt: {
      id: `a-${d.id}-${d.attempts}-${Math.random()}`, delivery_id: d.id, webhook_id: 'w1', org_id: 'o1', attempt: d.attempts + 1,
      request_headers: '{}', request_body: '{}', response_status: kind === 'succeeded' ? 200 : 500, response_body: null, error: null, latency_ms: 5, created_at: now,
    },
    delivery: d,
    webhook: { id: 'w1', org_id: 'o1', app_id: null },
    kind,
    lastStatus: kind === 'succeeded' ? 200 : kind === 'gone' ? 410 : 500,
    now,
    retryDelay: () => 1000,
    disableAfterMs: 10_000,
    ...extra,
  }
}

describeEachDialect('webhooks repo', (fresh) => {
  test('insert: the cursor starts at the Org head, the audit row commits with it; reads are Org-scoped; types', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await seedOrgApp(s, 'o2', 'a2')
    await record(s)
    await record(s)
    const repo = s.store.webhooks
    await newHook(s, repo)
    const w = (await repo.get('o1', 'w1'))!
    expect(w).toMatchObject({ id: 'w1', org_id: 'o1', cursor_seq: 2, enabled: true, secret_sealed: 'sealed', disabled_reason: null, deleted_at: null })
    expect(typeof w.created_at).toBe('number')
    expect(await repo.get('o2', 'w1')).toBeNull()
    expect((await repo.getAny('w1'))?.id).toBe('w1')
    expect((await repo.list('o1')).map((x) => x.id)).toEqual(['w1'])
    expect(await repo.list('o2')).toEqual([])
    expect(await repo.appInOrg('o1', 'a1')).toBe(true)
    expect(await repo.appInOrg('o2', 'a1')).toBe(false)
    expect(await repo.orgExists('o2')).toBe(true)
    expect(await repo.orgExists('nope')).toBe(false)
    expect(await sql(s, 'SELECT action, target_id FROM audit_log')).toEqual([{ action: 'webhook.created', target_id: 'w1' }])
  })

  test('an insert that fails writes no audit row (one transaction)', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const repo = s.store.webhooks
    await newHook(s, repo)
    await expect(newHook(s, repo)).rejects.toThrow()
    expect(await sql(s, 'SELECT action FROM audit_log')).toHaveLength(1)
  })

  test('delete, rotate, enable, test: audited in their transaction; a change that finds nothing writes nothing', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await seedOrgApp(s, 'o2', 'a2')
    const repo = s.store.webhooks
    await newHook(s, repo)
    expect(await repo.rotate('o1', 'w1', 'sealed2', 99, [by('webhook.secret_rotated', 'w1')])).toBe(true)
    expect(await repo.getAny('w1')).toMatchObject({ secret_sealed: 'sealed2', previous_secret_sealed: 'sealed', previous_secret_until: 99 })
    expect(await repo.rotate('o2', 'w1', 'x', 1, [by('webhook.secret_rotated', 'w1')])).toBe(false)
    const seq = await repo.appendTest({ id: 'w1', org_id: 'o1', app_id: null }, (seq) => [{ ...by('webhook.tested', 'w1'), data: { seq } }])
    expect(seq).toBe(1)
    const [ev] = await sql<{ type: string; data: string }>(s, 'SELECT type, data FROM events')
    expect([ev.type, JSON.parse(ev.data)]).toEqual(['webhook.test', { webhookId: 'w1' }])
    await record(s)
    expect(await repo.disable({ id: 'w1', org_id: 'o1', app_id: null }, 'manual', s.clock.now())).toBe(true)
    expect(await repo.disable({ id: 'w1', org_id: 'o1', app_id: null }, 'manual', s.clock.now())).toBe(false)
    expect(await repo.enable('o1', 'w1', [by('webhook.enabled', 'w1')])).toBe(true)
    // The cursor stays where it stopped (the endpoint fanned out nothing): the events of the disabled time follow.
    expect(await repo.getAny('w1')).toMatchObject({ enabled: true, disabled_reason: null, cursor_seq: 0 })
    expect(await repo.enable('o2', 'w1', [by('webhook.enabled', 'w1')])).toBe(false)
    expect(await repo.delete('o2', 'w1', s.clock.now(), [by('webhook.deleted', 'w1')])).toBe(false)
    expect(await repo.delete('o1', 'w1', s.clock.now(), [by('webhook.deleted', 'w1')])).toBe(true)
    expect(await repo.delete('o1', 'w1', s.clock.now(), [by('webhook.deleted', 'w1')])).toBe(false)
    expect(await repo.get('o1', 'w1')).toBeNull()
    const audit = await sql<{ action: string; data: string }>(s, 'SELECT action, data FROM audit_log ORDER BY created_at, id')
    expect(audit.map((a) => a.action).sort()).toEqual(['webhook.created', 'webhook.deleted', 'webhook.enabled', 'webhook.secret_rotated', 'webhook.tested'])
    expect(JSON.parse(audit.find((a) => a.action === 'webhook.tested')!.data)).toEqual({ seq: 1 })
    const types = (await sql<{ type: string }>(s, 'SELECT type FROM events ORDER BY seq')).map((e) => e.type)
    expect(types).toEqual(['webhook.test', 'webhook.test', 'webhook.disabled'])
  })

  test('fan-out: matching events become deliveries, the cursor moves, a second pass adds nothing; delete fails what was pending', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const repo = s.store.webhooks
    await newHook(s, repo)
    for (let i = 0; i < 5; i++) await record(s)
    expect((await repo.behind()).map((w) => [w.id, w.cursor_seq, w.enabled])).toEqual([['w1', 0, true]])
    expect((await repo.behindInOrg('o1')).map((w) => w.id)).toEqual(['w1'])
    expect(await repo.fanOutPage('o1', 'w1', 3, (_w, e) => JSON.parse(e.data).webhookId === 'other', ids, s.clock.now())).toBe(3)
    expect(await repo.fanOutPage('o1', 'w1', 3, everything, ids, s.clock.now())).toBe(2)
    expect(await repo.fanOutPage('o1', 'w1', 3, everything, ids, s.clock.now())).toBe(0)
    expect(await repo.behind()).toEqual([])
    expect(await repo.behindInOrg('o1')).toEqual([])
    expect((await repo.getAny('w1'))!.cursor_seq).toBe(5)
    const rows = await sql<{ event_seq: number; status: string; payload: string }>(s, 'SELECT event_seq, status, payload FROM webhook_deliveries ORDER BY event_seq')
    expect(rows.map((r) => [r.event_seq, r.status])).toEqual([1, 2, 3, 4, 5].map((q) => [q, 'pending']))
    expect(JSON.parse(rows[0].payload)).toMatchObject({ seq: 1, type: 'webhook.test', data: { webhookId: 'other' } })
    expect(await repo.nextDue()).toBe(s.clock.now())
    await repo.delete('o1', 'w1', s.clock.now(), [])
    expect((await sql<{ status: string }>(s, 'SELECT DISTINCT status FROM webhook_deliveries')).map((r) => r.status)).toEqual(['failed'])
    expect(await repo.nextDue()).toBeNull()
  })

  test('behind: live endpoints of every Org with an event past the cursor; not disabled or deleted ones, nor one whose events past it were deleted', async () => {
    const s = await fresh()
    const repo = s.store.webhooks
    for (const o of ['o1', 'o2', 'o3']) await seedOrgApp(s, o, `a-${o}`)
    await newHook(s, repo, 'w1', 'o1')
    await newHook(s, repo, 'w2', 'o1')
    await newHook(s, repo, 'w3', 'o2')
    await newHook(s, repo, 'w4', 'o2')
    await newHook(s, repo, 'w5', 'o3')
    expect(await repo.behind()).toEqual([])
    await record(s, 'o1')
    await record(s, 'o2')
    await record(s, 'o3')
    expect((await repo.behind()).map((w) => w.id)).toEqual(['w1', 'w2', 'w3', 'w4', 'w5'])
    await repo.disable({ id: 'w2', org_id: 'o1', app_id: null }, 'manual', s.clock.now())
    await repo.delete('o2', 'w3', s.clock.now(), [])
    // w2's disable recorded webhook.disabled in o1: w1 is behind by two events now.
    expect((await repo.behind()).map((w) => [w.id, w.cursor_seq])).toEqual([['w1', 0], ['w4', 0], ['w5', 0]])
    expect((await repo.behindInOrg('o1')).map((w) => w.id)).toEqual(['w1'])
    expect((await repo.behindInOrg('o2')).map((w) => w.id)).toEqual(['w4'])
    // o3's only event deleted (a report's removal, retention): nothing past w5's cursor to fan out, though
    // the Org's seq floor is above it.
    await sql(s, "DELETE FROM events WHERE org_id = 'o3'")
    expect((await repo.behind()).map((w) => w.id)).toEqual(['w1', 'w4'])
    expect(await repo.behindInOrg('o3')).toEqual([])
    expect(await repo.fanOutPage('o1', 'w1', 500, everything, ids, s.clock.now())).toBe(2)
    expect((await repo.behind()).map((w) => w.id)).toEqual(['w4'])
  })

  test('claim: one delivery in flight per endpoint, the due one of the lowest seq, busy ones skipped; settle is compare-and-set on the attempt count', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const repo = s.store.webhooks
    await newHook(s, repo)
    await newHook(s, repo, 'w2')
    for (let i = 0; i < 3; i++) await record(s)
    await repo.fanOutPage('o1', 'w1', 10, everything, ids, s.clock.now())
    await repo.fanOutPage('o1', 'w2', 10, everything, ids, s.clock.now())
    const now = s.clock.now()
    const of = async (w: string) => (await sql<{ id: string }>(s, 'SELECT id FROM webhook_deliveries WHERE webhook_id = ? ORDER BY event_seq', [w])).map((r) => r.id)
    const [all, w2] = [await of('w1'), await of('w2')]
    // The lowest seq of w1 is busy in this process: its next one; one per endpoint, whatever the limit.
    const first = await repo.claim(now, now + 60_000, 5, [all[0]], OPEN)
    expect(first.map((d) => d.id).sort()).toEqual([all[1], w2[0]].sort())
    // Both endpoints have an attempt in flight: nothing more until one settles.
    expect(await repo.claim(now, now + 60_000, 5, [], OPEN)).toEqual([])
    const d = first.find((x) => x.id === all[1])!
    expect(typeof d.lease_until).toBe('number')
    expect(await repo.redeliver('o1', d.id, now, [by('webhook.redelivered', 'w1')])).toBe(false)
    expect(await repo.settle(outcome(d, 'succeeded', now))).toEqual({ settled: true })
    // The same attempt settled again (a second dispatcher): nothing written.
    expect(await repo.settle(outcome(d, 'succeeded', now))).toEqual({ settled: false })
    expect(await sql(s, 'SELECT id FROM webhook_attempts WHERE delivery_id = ?', [d.id])).toHaveLength(1)
    expect(await repo.getDelivery('o1', d.id)).toMatchObject({ status: 'succeeded', attempts: 1, lease_until: null, last_status: 200 })
    expect(await repo.getDelivery('o2', d.id)).toBeNull()
    expect(await repo.deliveryOrg(d.id)).toBe('o1')
    const log = await repo.attemptsOf([d.id, all[0]])
    expect(log.map((a) => [a.delivery_id, a.attempt])).toEqual([[d.id, 1]])
    // Settled: w1's next is its lowest pending seq again (all[0], no longer busy), w2 still in flight.
    expect((await repo.claim(now, now + 60_000, 5, [], OPEN)).map((x) => x.id)).toEqual([all[0]])
    expect((await repo.deliveries('o1', 'w1', 'g', 10)).map((x) => x.id)).toEqual([...all].sort().reverse())
    expect(await repo.deliveries('o2', 'w1', 'g', 10)).toEqual([])
    // Redelivered: pending again with a fresh schedule, audited.
    expect(await repo.redeliver('o1', d.id, now, [by('webhook.redelivered', 'w1')])).toBe(true)
    expect(await repo.getDelivery('o1', d.id)).toMatchObject({ status: 'pending', schedule_index: 0, attempts: 1 })
    expect(await sql(s, "SELECT id FROM audit_log WHERE action = 'webhook.redelivered'")).toHaveLength(1)
  })

  test("an Org at its share of the pool is left out of the claim; the others' endpoints are claimed", async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await seedOrgApp(s, 'o2', 'a2')
    const repo = s.store.webhooks
    // o1 has six endpoints, o2 one: o1's come first in table order.
    const greedy = ['w1', 'w2', 'w3', 'w4', 'w5', 'w6']
    for (const h of greedy) await newHook(s, repo, h)
    await newHook(s, repo, 'wz', 'o2')
    await record(s)
    await record(s, 'o2')
    for (const h of greedy) await repo.fanOutPage('o1', h, 10, everything, ids, s.clock.now())
    await repo.fanOutPage('o2', 'wz', 10, everything, ids, s.clock.now())
    const now = s.clock.now()
    // o1 full: only o2's endpoint, whatever the room.
    expect((await repo.claim(now, now + 60_000, 10, [], ['o1'])).map((d) => d.webhook_id)).toEqual(['wz'])
    // o1 no longer left out: its endpoints, up to the limit.
    expect((await repo.claim(now, now + 60_000, 4, [], [])).map((d) => d.org_id)).toEqual(['o1', 'o1', 'o1', 'o1'])
    expect(await repo.claim(now, now + 60_000, 10, [], ['o1', 'o2'])).toEqual([])
    expect((await repo.claim(now, now + 60_000, 10, [], ['o2'])).map((d) => d.webhook_id).sort()).toEqual(['w5', 'w6'])
  })

  test('releaseLeases hands every leased pending delivery back (a dispatcher starting: the leases are a predecessor\'s)', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const repo = s.store.webhooks
    await newHook(s, repo)
    for (let i = 0; i < 2; i++) await record(s)
    await repo.fanOutPage('o1', 'w1', 10, everything, ids, s.clock.now())
    const now = s.clock.now()
    const [held] = await repo.claim(now, now + 60_000, 5, [], OPEN)
    expect(await repo.claim(now, now + 60_000, 5, [], OPEN)).toEqual([])
    await repo.releaseLeases()
    expect((await repo.claim(now, now + 60_000, 5, [], OPEN)).map((d) => d.id)).toEqual([held.id])
  })

  test('failures retry, then disable the endpoint once failing lasts long enough (webhook.disabled recorded); 410 disables at once', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const repo = s.store.webhooks
    await newHook(s, repo)
    await record(s)
    await repo.fanOutPage('o1', 'w1', 10, everything, ids, s.clock.now())
    let now = s.clock.now()
    let [d] = await repo.claim(now, now + 60_000, 1, [], OPEN)
    expect(await repo.settle(outcome(d, 'failed', now))).toEqual({ settled: true })
    expect(await repo.getDelivery('o1', d.id)).toMatchObject({ status: 'pending', attempts: 1, schedule_index: 1, next_attempt_at: now + 1000, last_status: 500 })
    expect((await repo.getAny('w1'))!.failing_since).toBe(now)
    now += 20_000
    ;[d] = await repo.claim(now, now + 60_000, 1, [], OPEN)
    expect(await repo.settle(outcome(d, 'failed', now))).toEqual({ settled: true, disabled: 'every delivery failed for 5 days' })
    expect(await repo.getAny('w1')).toMatchObject({ enabled: false, disabled_reason: 'every delivery failed for 5 days' })
    expect(await repo.getDelivery('o1', d.id)).toMatchObject({ status: 'failed', next_attempt_at: null })
    expect((await sql<{ type: string }>(s, 'SELECT type FROM events ORDER BY seq')).map((e) => e.type)).toEqual(['webhook.test', 'webhook.disabled'])
    // Failed in [created, created+1): redelivered in bulk, audited with the count.
    expect(await repo.enable('o1', 'w1', [])).toBe(true)
    expect(await repo.redeliverFailed('o1', 'w1', 0, now + 1, now, (n) => [{ ...by('webhook.failed_redelivered', 'w1'), data: { n } }])).toBe(1)
    const [a] = await sql<{ data: string }>(s, "SELECT data FROM audit_log WHERE action = 'webhook.failed_redelivered'")
    expect(JSON.parse(a.data)).toEqual({ n: 1 })
    ;[d] = await repo.claim(now, now + 60_000, 1, [], OPEN)
    expect(await repo.settle(outcome(d, 'gone', now))).toEqual({ settled: true, disabled: 'the endpoint answered 410 Gone' })
    expect((await repo.getAny('w1'))!.enabled).toBe(false)
    // Retention: settled deliveries and attempts older than the cut go.
    expect(await repo.purge(now + 1)).toBe(4)
    expect(await sql(s, 'SELECT id FROM webhook_deliveries')).toHaveLength(0)
  })

  test('two dispatchers claiming and settling at once (two pools on PostgreSQL): each delivery claimed once, never two in flight for one endpoint, each endpoint in seq order', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const repo = s.store.webhooks
    const hooks = ['w1', 'w2', 'w3', 'w4', 'w5', 'w6']
    for (const h of hooks) await newHook(s, repo, h)
    for (let i = 0; i < 10; i++) await record(s)
    for (const h of hooks) await repo.fanOutPage('o1', h, 100, everything, ids, s.clock.now())
    const otherStorage = s.storage.dialect === 'pg' ? pgStorage(openPool(s.location, 4), { callerClock: true }) : s.storage
    const other = storeOf(otherStorage, s.clock).webhooks
    const now = s.clock.now()
    const claimed: { id: string; webhook: string; seq: number }[] = []
    const inFlight = new Set<string>()
    const twice: string[] = []
    const worker = async (r: WebhooksRepo) => {
      for (let rounds = 0; rounds < 200; rounds++) {
        const got = await r.claim(now, now + 60_000, 3, [], OPEN)
        if (got.length === 0) {
          if (claimed.length === 60) return
          await Bun.sleep(1)
          continue
        }
        for (const d of got) {
          if (inFlight.has(d.webhook_id)) twice.push(d.webhook_id)
          inFlight.add(d.webhook_id)
          claimed.push({ id: d.id, webhook: d.webhook_id, seq: d.event_seq })
        }
        await Bun.sleep(1)
        for (const d of got) {
          inFlight.delete(d.webhook_id)
          await r.settle({ ...outcome(d, 'succeeded', now), webhook: { id: d.webhook_id, org_id: 'o1', app_id: null } })
        }
      }
    }
    await Promise.all([worker(repo), worker(other), worker(repo), worker(other)])
    if (otherStorage !== s.storage && otherStorage.dialect === 'pg') await otherStorage.pool.end()
    expect(twice).toEqual([])
    expect(claimed).toHaveLength(60)
    expect(new Set(claimed.map((c) => c.id)).size).toBe(60)
    for (const h of hooks) expect(claimed.filter((c) => c.webhook === h).map((c) => c.seq)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1))
  })

  test('two dispatchers fanning out and settling at once (two pools on PostgreSQL): one delivery per event, one settle per attempt', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const repo = s.store.webhooks
    await newHook(s, repo)
    for (let i = 0; i < 30; i++) await record(s)
    const otherStorage = s.storage.dialect === 'pg' ? pgStorage(openPool(s.location, 4), { callerClock: true }) : s.storage
    const other = storeOf(otherStorage, s.clock).webhooks
    const now = s.clock.now()
    const pass = async (r: WebhooksRepo) => {
      while ((await r.fanOutPage('o1', 'w1', 7, everything, ids, now)) > 0);
    }
    await Promise.all([pass(repo), pass(other), pass(repo), pass(other)])
    const rows = await sql<{ event_seq: number }>(s, 'SELECT event_seq FROM webhook_deliveries ORDER BY event_seq')
    expect(rows.map((r) => r.event_seq)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1))
    expect((await repo.getAny('w1'))!.cursor_seq).toBe(30)
    const results: { settled: boolean }[] = []
    for (let i = 0; i < 30; i++) {
      const [d] = await repo.claim(now, now + 60_000, 30, [], OPEN)
      expect(d.event_seq).toBe(i + 1)
      results.push(...(await Promise.all([repo.settle(outcome(d, 'succeeded', now)), other.settle(outcome(d, 'succeeded', now))])))
    }
    if (otherStorage !== s.storage && otherStorage.dialect === 'pg') await otherStorage.pool.end()
    expect(results.filter((r) => r.settled)).toHaveLength(30)
    expect(await sql(s, 'SELECT id FROM webhook_attempts')).toHaveLength(30)
    expect((await sql<{ n: number }>(s, "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'succeeded' AND attempts = 1"))[0].n).toBe(30)
  })
})

/** Cluster mode: a dispatching node's clock never decides when a delivery is due or its lease ran out (issue 35.4). */
describe('webhooks repo [pg]: due times and delivery leases on the database clock', () => {
  test('a dispatcher 3 minutes ahead takes no delivery before it is due, nor one whose lease another holds', async () => {
    const s = await freshStore('pg')
    const SKEW = 3 * 60_000
    const pools = [openPool(s.location, 2), openPool(s.location, 2)]
    try {
      const [a, fast] = pools.map((p) => storeOf(pgStorage(p), s.clock).webhooks)
      const dbNow = async () => Number((await sql<{ now: number }>(s, 'SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint AS now'))[0].now)
      await seedOrgApp(s)
      const repo = s.store.webhooks
      await newHook(s, repo)
      await record(s)
      await repo.fanOutPage('o1', 'w1', 10, everything, ids, s.clock.now())
      // Due in a minute on the database's clock: the fast node's "now" is past it, and still nothing.
      await sql(s, 'UPDATE webhook_deliveries SET next_attempt_at = ?', [(await dbNow()) + 60_000])
      let now = (await dbNow()) + SKEW
      expect(await fast.claim(now, now + 60_000, 5, [], OPEN)).toEqual([])
      // Due now: node `a` leases it for a minute of the database's clock.
      await sql(s, 'UPDATE webhook_deliveries SET next_attempt_at = ?', [(await dbNow()) - 1])
      now = await dbNow()
      const [d] = await a.claim(now, now + 60_000, 5, [], OPEN)
      expect(d.lease_until).toBeGreaterThan((await dbNow()) + 50_000)
      now = (await dbNow()) + SKEW
      expect(await fast.claim(now, now + 60_000, 5, [], OPEN)).toEqual([])
      expect((await sql<{ lease_until: number }>(s, 'SELECT lease_until FROM webhook_deliveries'))[0].lease_until).toBe(d.lease_until!)
    } finally {
      await Promise.all(pools.map((p) => p.end()))
    }
  })
})
