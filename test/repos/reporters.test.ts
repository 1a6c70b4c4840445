/** modules/reporters/repo.ts on both dialects: the same reports found, the same removal, the same clusters after it. */
import { expect, test } from 'bun:test'
import { describeEachDialect } from '../dialects'
import { insertReport, seedOrgApp, sql } from './store-fixtures'

describeEachDialect('reporters repo', (fresh) => {
  test('reportIds: by external id or email (any case), per App, newest first, below a cursor; never another Org', async () => {
    const s = await fresh()
    await seedOrgApp(s, 'o1', 'a1')
    await seedOrgApp(s, 'o2', 'a2')
    for (const [id, org, app] of [['f1', 'o1', 'a1'], ['f2', 'o1', 'a1'], ['f3', 'o1', 'a1'], ['f4', 'o2', 'a2']]) await insertReport(s, id, 'received', org, app)
    await sql(s, "UPDATE feedback SET email = 'Ann@Example.com', external_user_id = 'ann' WHERE id IN ('f1', 'f3', 'f4')")
    const repo = s.store.reporters
    expect(await repo.reportIds({ orgId: 'o1', who: { email: 'ann@example.COM' }, limit: 10 })).toEqual(['f3', 'f1'])
    expect(await repo.reportIds({ orgId: 'o1', who: { externalUserId: 'ann' }, before: 'f3', limit: 10 })).toEqual(['f1'])
    expect(await repo.reportIds({ orgId: 'o1', who: { externalUserId: 'ann' }, appId: 'a2', limit: 10 })).toEqual([])
    expect(await repo.reportIds({ orgId: 'o2', who: { externalUserId: 'ann' }, limit: 10 })).toEqual(['f4'])
  })

  test('removeReports: only the Org\'s; a removed lead hands its cluster to its oldest surviving duplicate; a lead that lost one is recounted', async () => {
    const s = await fresh()
    await seedOrgApp(s, 'o1', 'a1')
    await seedOrgApp(s, 'o2', 'a2')
    for (const id of ['l1', 'd2', 'd3', 'd4', 'l5', 'd6', 'd7']) await insertReport(s, id, 'received', 'o1', 'a1')
    await insertReport(s, 'x9', 'received', 'o2', 'a2')
    await sql(s, "UPDATE feedback SET duplicate_of_id = 'l1' WHERE id IN ('d2', 'd3', 'd4')")
    await sql(s, "UPDATE feedback SET duplicate_count = 3, theme = 'old words' WHERE id = 'l1'")
    await sql(s, "UPDATE feedback SET duplicate_of_id = 'l5' WHERE id IN ('d6', 'd7')")
    await sql(s, "UPDATE feedback SET duplicate_count = 2, consolidated_text = 'quoted words' WHERE id = 'l5'")
    await sql(s, "UPDATE feedback SET suggested_lead_id = 'l1', suggested_reason = 'quotes l1' WHERE id = 'l5'")
    const out = await s.store.reporters.removeReports('o1', ['l1', 'd2', 'd6', 'x9'])
    expect(out.removed).toBe(3)
    const rows = await sql<{ id: string; duplicate_of_id: string | null; duplicate_count: number; theme: string | null; consolidated_text: string | null; suggested_lead_id: string | null }>(
      s,
      'SELECT id, duplicate_of_id, duplicate_count, theme, consolidated_text, suggested_lead_id FROM feedback ORDER BY id',
    )
    const by = Object.fromEntries(rows.map((r) => [r.id, r]))
    expect(Object.keys(by).sort()).toEqual(['d3', 'd4', 'd7', 'l5', 'x9'])
    expect(by.d3).toMatchObject({ duplicate_of_id: null, duplicate_count: 1, theme: null })
    expect(by.d4.duplicate_of_id).toBe('d3')
    expect(by.l5).toMatchObject({ duplicate_count: 1, consolidated_text: null, suggested_lead_id: null })
    expect(by.d7.duplicate_of_id).toBe('l5')
    expect(await s.store.reporters.removeReports('o1', ['l1', 'd2'])).toEqual({ removed: 0, uploadKeys: [] })
  })
})
