/** modules/audit/repo.ts (and the AuditLog over it) on both dialects: the same cases, the same answers. */
import { expect, test } from 'bun:test'
import { describeEachDialect } from '../dialects'
import { createAuditLog } from '../../src/modules/audit/index'
import { run } from './raw'

describeEachDialect('audit repo', (fresh) => {
  test('an entry reads back as written: ids rise, data is JSON text, epoch ms a number, absent fields null', async () => {
    const s = await fresh()
    const repo = s.store.audit
    const id1 = await repo.append({ orgId: 'o1', actor: 'cli', action: 'org.created', targetId: 'o1', data: { name: 'Acme' }, ip: '10.0.0.1' })
    s.clock.advance(5)
    const id2 = await repo.append({ orgId: null, actor: 'system', action: 'admin.created' })
    expect(id2 > id1).toBe(true)
    const page = await repo.page({ limit: 10 })
    expect(page).toEqual([
      { id: id2, orgId: null, actor: 'system', action: 'admin.created', targetId: null, data: '{}', ip: null, createdAt: s.clock.now() },
      { id: id1, orgId: 'o1', actor: 'cli', action: 'org.created', targetId: 'o1', data: '{"name":"Acme"}', ip: '10.0.0.1', createdAt: s.clock.now() - 5 },
    ])
    expect(typeof page[0].createdAt).toBe('number')
  })

  test('pages: newest first, by one Org, by a list of Orgs (empty: none), before a cursor, limited', async () => {
    const s = await fresh()
    const repo = s.store.audit
    const ids: string[] = []
    for (const orgId of ['o1', 'o2', 'o1', null, 'o3', 'o1']) {
      ids.push(await repo.append({ orgId, actor: 'cli', action: 'x' }))
      s.clock.advance(1)
    }
    const idsOf = (rows: { id: string }[]) => rows.map((r) => ids.indexOf(r.id))
    expect(idsOf(await repo.page({ limit: 10 }))).toEqual([5, 4, 3, 2, 1, 0])
    expect(idsOf(await repo.page({ orgId: 'o1', limit: 10 }))).toEqual([5, 2, 0])
    expect(idsOf(await repo.page({ orgIds: ['o2', 'o3'], limit: 10 }))).toEqual([4, 1])
    expect(await repo.page({ orgIds: [], limit: 10 })).toEqual([])
    expect(idsOf(await repo.page({ orgId: 'o1', orgIds: ['o2'], limit: 10 }))).toEqual([5, 2, 0])
    expect(idsOf(await repo.page({ before: ids[3], limit: 2 }))).toEqual([2, 1])
    expect(await repo.page({ orgId: 'nope', limit: 10 })).toEqual([])
  })

  test('the log pages with a cursor and parses data back', async () => {
    const s = await fresh()
    const log = createAuditLog(s.store.audit, s.clock)
    for (let i = 0; i < 3; i++) {
      await log.record({ orgId: 'o1', actor: 'admin:a', action: `a${i}`, data: { i } })
      s.clock.advance(1)
    }
    const first = await log.list(null, { orgId: 'o1', limit: 2 })
    expect(first.data.map((e) => e.action)).toEqual(['a2', 'a1'])
    expect(first.data[0].data).toEqual({ i: 2 })
    expect(first.data[0].createdAt).toMatch(/Z$/)
    const second = await log.list(null, { orgId: 'o1', limit: 2, cursor: first.nextCursor! })
    expect(second.data.map((e) => e.action)).toEqual(['a0'])
    expect(second.nextCursor).toBeNull()
    expect((await log.list(['o2'], { limit: 5 })).data).toEqual([])
  })

  test('pageForward: one Org oldest first, after a cursor, since a time; purgeBefore deletes the oldest in batches', async () => {
    const s = await fresh()
    const repo = s.store.audit
    const t0 = s.clock.now()
    const ids: string[] = []
    for (const orgId of ['o1', 'o2', 'o1', 'o1', 'o1']) {
      ids.push(await repo.append({ orgId, actor: 'cli', action: 'x' }))
      s.clock.advance(10)
    }
    const idsOf = (rows: { id: string }[]) => rows.map((r) => ids.indexOf(r.id))
    expect(idsOf(await repo.pageForward({ orgId: 'o1', limit: 10 }))).toEqual([0, 2, 3, 4])
    expect(idsOf(await repo.pageForward({ orgId: 'o1', after: ids[2], limit: 10 }))).toEqual([3, 4])
    expect(idsOf(await repo.pageForward({ orgId: 'o1', limit: 2 }))).toEqual([0, 2])
    expect(idsOf(await repo.pageForward({ orgId: 'o1', since: t0 + 30, limit: 10 }))).toEqual([3, 4])
    expect(await repo.pageForward({ orgId: 'nope', limit: 10 })).toEqual([])
    expect(await repo.purgeBefore(t0 + 25, 2)).toBe(2)
    expect(await repo.purgeBefore(t0 + 25, 2)).toBe(1)
    expect(await repo.purgeBefore(t0 + 25, 2)).toBe(0)
    expect(idsOf(await repo.page({ limit: 10 }))).toEqual([4, 3])
  })

  test('pageForward is oldest first by createdAt when another process wrote a lower id later in the same second', async () => {
    const s = await fresh()
    const repo = s.store.audit
    const first = await repo.append({ orgId: 'o1', actor: 'cli', action: 'org.created' })
    s.clock.advance(100)
    // The CLI's next process: the same second, random bytes that happen to sort below the server's.
    const later = first.slice(0, 8) + '0000000000' + '000001'
    await run(s.storage, 'INSERT INTO audit_log (id, org_id, actor, action, data, created_at) VALUES (?, ?, ?, ?, ?, ?)', [later, 'o1', 'cli', 'app.created', '{}', s.clock.now()])
    s.clock.advance(100)
    const last = await repo.append({ orgId: 'o1', actor: 'cli', action: 'key.created' })
    const actions = (rows: { action: string }[]) => rows.map((r) => r.action)
    expect(actions(await repo.pageForward({ orgId: 'o1', limit: 10 }))).toEqual(['org.created', 'app.created', 'key.created'])
    // The cursor carries the order on: after each row come exactly the rows after it.
    expect(actions(await repo.pageForward({ orgId: 'o1', after: first, limit: 10 }))).toEqual(['app.created', 'key.created'])
    expect(actions(await repo.pageForward({ orgId: 'o1', after: later, limit: 10 }))).toEqual(['key.created'])
    expect(await repo.pageForward({ orgId: 'o1', after: last, limit: 10 })).toEqual([])
    // A purged (or foreign) cursor starts at the second its id was made in.
    expect(actions(await repo.pageForward({ orgId: 'o2', after: first, limit: 10 }))).toEqual([])
    expect(actions(await repo.pageForward({ orgId: 'o1', after: '0'.repeat(24), limit: 10 }))).toEqual(['org.created', 'app.created', 'key.created'])
  })
})
