/** modules/events/repo.ts on both dialects: paging and filters, the last seq, the watcher's look, retention, Org isolation. */
import { expect, test } from 'bun:test'
import { describeEachDialect, type FreshStore } from '../dialects'
import { EventHub } from '../../src/modules/events/hub'
import type { EventBatch } from '../../src/modules/events/batch'
import { seedOrgApp, sql } from './store-fixtures'

/** Appends `n` events of `type` to the Org through the lifecycle (the real outbox of the dialect); their seqs. */
async function append(s: FreshStore, orgId: string, n: number, type: 'webhook.test' | 'agent_run.started' = 'webhook.test', appId: string | null = null): Promise<number[]> {
  const lc = s.store.lifecycle
  const seqs: number[] = []
  for (let i = 0; i < n; i++) {
    seqs.push(type === 'webhook.test' ? await lc.record({ orgId, appId }, 'webhook.test', { webhookId: `w${i}` }) : await lc.record({ orgId, appId }, 'agent_run.started', { runId: `r${i}`, feedbackId: 'f1', provider: 'x' }))
  }
  return seqs
}

describeEachDialect('events repo', (fresh) => {
  test('pages by seq in order; a full page ends at its last row, a short one at the Org head', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const seqs = await append(s, 'o1', 5)
    expect(seqs).toEqual([1, 2, 3, 4, 5])
    const repo = s.store.events
    const p1 = await repo.page('o1', { after: 0, limit: 2 })
    expect(p1.rows.map((r) => r.seq)).toEqual([1, 2])
    expect(p1.nextAfter).toBe(2)
    const p2 = await repo.page('o1', { after: 2, limit: 10 })
    expect(p2.rows.map((r) => r.seq)).toEqual([3, 4, 5])
    expect(p2.nextAfter).toBe(5)
    const row = p2.rows[0]
    expect(typeof row.seq).toBe('number')
    expect(typeof row.created_at).toBe('number')
    expect(row).toMatchObject({ org_id: 'o1', app_id: null, type: 'webhook.test' })
    expect(JSON.parse(row.data)).toEqual({ webhookId: 'w2' })
    expect(await repo.page('o1', { after: 5, limit: 10 })).toEqual({ rows: [], nextAfter: 5 })
    // A cursor past the head stays where it is.
    expect((await repo.page('o1', { after: 9, limit: 10 })).nextAfter).toBe(9)
  })

  test('filters by types and App; a short filtered page skips to the head past excluded events', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await append(s, 'o1', 2, 'webhook.test', 'a1')
    await append(s, 'o1', 2, 'agent_run.started', null)
    await append(s, 'o1', 1, 'webhook.test', null)
    const repo = s.store.events
    const byType = await repo.page('o1', { after: 0, limit: 10, types: ['agent_run.started'] })
    expect(byType.rows.map((r) => r.seq)).toEqual([3, 4])
    expect(byType.nextAfter).toBe(5)
    const two = await repo.page('o1', { after: 0, limit: 10, types: ['agent_run.started', 'webhook.test'] })
    expect(two.rows.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5])
    const byApp = await repo.page('o1', { after: 0, limit: 10, appId: 'a1' })
    expect(byApp.rows.map((r) => r.seq)).toEqual([1, 2])
    const both = await repo.page('o1', { after: 0, limit: 1, types: ['webhook.test'], appId: 'a1' })
    expect(both).toMatchObject({ nextAfter: 1 })
    expect(both.rows.map((r) => r.seq)).toEqual([1])
    expect(await repo.page('o1', { after: 0, limit: 10, types: ['feedback.received'] })).toEqual({ rows: [], nextAfter: 5 })
  })

  test('Org isolation: another Org sees none of these events and has its own seqs', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await seedOrgApp(s, 'o2', 'a2')
    await append(s, 'o1', 3)
    expect(await append(s, 'o2', 1)).toEqual([1])
    const repo = s.store.events
    expect((await repo.page('o2', { after: 0, limit: 10 })).rows.map((r) => [r.org_id, r.seq])).toEqual([['o2', 1]])
    expect(await repo.after('o2', 0, 10)).toHaveLength(1)
    expect((await repo.after('o1', 1, 10)).map((r) => r.seq)).toEqual([2, 3])
    expect(await repo.lastSeq('o1')).toBe(3)
    expect(await repo.lastSeq('o2')).toBe(1)
    expect(await repo.lastSeq('nobody')).toBe(0)
    expect(await repo.page('nobody', { after: 0, limit: 10 })).toEqual({ rows: [], nextAfter: 0 })
  })

  test('the watcher: the first look names no Org; later looks name the Orgs that got events, once', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await seedOrgApp(s, 'o2', 'a2')
    await append(s, 'o1', 1)
    const repo = s.store.events
    const first = await repo.look(null, true)
    expect(first.orgs).toEqual([])
    const none = await repo.look(first.mark, true)
    expect(none.orgs).toEqual([])
    await append(s, 'o2', 2)
    await append(s, 'o1', 1)
    const next = await repo.look(none.mark, true)
    expect(next.orgs.sort()).toEqual(['o1', 'o2'])
    expect((await repo.look(next.mark, true)).orgs).toEqual([])
    // Without listeners the mark moves on and names nobody.
    await append(s, 'o2', 1)
    const quiet = await repo.look(next.mark, false)
    expect(quiet.orgs).toEqual([])
    expect((await repo.look(quiet.mark, true)).orgs).toEqual([])
  })

  test('retention deletes old events only, in slices, and keeps the last seq: the next append follows it', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const day = 86_400_000
    const start = s.clock.now()
    s.clock.set(start - 40 * day)
    await append(s, 'o1', 3)
    s.clock.set(start)
    await append(s, 'o1', 1)
    const repo = s.store.events
    expect(await repo.purgeBefore(start - 30 * day)).toBe(3)
    expect((await repo.after('o1', 0, 10)).map((r) => r.seq)).toEqual([4])
    // Everything purged: the head stays.
    expect(await repo.purgeBefore(start + day)).toBe(1)
    expect(await sql(s, 'SELECT id FROM events')).toHaveLength(0)
    expect(await repo.lastSeq('o1')).toBe(4)
    expect(await repo.page('o1', { after: 0, limit: 10 })).toEqual({ rows: [], nextAfter: 4 })
    expect(await append(s, 'o1', 1)).toEqual([5])
    expect(await repo.purgeBefore(start - 100 * day)).toBe(0)
  })

  test('the hub on this dialect: a subscriber gets the events appended after it subscribed, in order, once; the dispatchers hear of the Org', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await seedOrgApp(s, 'o2', 'a2')
    await append(s, 'o1', 2)
    const hub = new EventHub(s.store.events, { pollMs: 60_000, heartbeatMs: 60_000 })
    const got: number[] = []
    const orgs: string[] = []
    hub.subscribeAll((orgId) => orgs.push(orgId))
    hub.subscribe('o1', (batch: EventBatch) => {
      for (let seq = batch.first; seq <= batch.last; seq++) got.push(seq)
      return 0
    })
    await hub.whenReady('o1')
    await append(s, 'o1', 3)
    await append(s, 'o2', 1)
    await hub.check()
    for (let i = 0; i < 500 && got.length < 3; i++) await Bun.sleep(10)
    expect(got).toEqual([3, 4, 5])
    expect(orgs.sort()).toEqual(['o1', 'o2'])
    await hub.check()
    await Bun.sleep(30)
    expect(got).toEqual([3, 4, 5])
    hub.stop()
  })
})
