/** modules/admin-api/inbox-repo.ts on both dialects: folders, filters, paging, read marks, counts, history, the live seq; cross-Org ids find nothing. */
import { expect, test } from 'bun:test'
import { describeEachDialect, type FreshStore } from '../dialects'
import { newId } from '../../src/core/ids'
import { insertReport, seedOrgApp, sql } from './store-fixtures'

const DAY = 86_400_000
const T0 = Date.UTC(2026, 0, 10)

/** Reports created on days 0..n-1 after T0 (ids carry their creation second), newest last. */
async function reports(s: FreshStore, n: number, status = 'awaiting_manual', orgId = 'o1', appId = 'a1'): Promise<string[]> {
  const ids: string[] = []
  for (let i = 0; i < n; i++) {
    s.clock.set(T0 + i * DAY)
    const id = newId(s.clock)
    await insertReport(s, id, status, orgId, appId)
    await sql(s, 'UPDATE feedback SET created_at = ? WHERE id = ?', [T0 + i * DAY, id])
    ids.push(id)
  }
  return ids
}

describeEachDialect('inbox repo', (fresh) => {
  test('a folder newest first, paged by id; duplicates and other folders left out; the live seq read with it', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await seedOrgApp(s, 'o2', 'a2')
    const ids = await reports(s, 5)
    const [queued] = await reports(s, 1, 'queued')
    await sql(s, 'UPDATE feedback SET duplicate_of_id = ? WHERE id = ?', [ids[4], ids[3]])
    await reports(s, 2, 'awaiting_manual', 'o2', 'a2')
    await s.store.lifecycle.record({ orgId: 'o1', appId: null }, 'webhook.test', { webhookId: 'w' })
    const inbox = s.store.inbox
    const p1 = await inbox.list('o1', 'ad1', { limit: 2 })
    expect(p1.data.map((r) => r.id)).toEqual([ids[4], ids[2]])
    expect(p1.eventSeq).toBe(1)
    expect(p1.data[0]).toMatchObject({ appId: 'a1', status: 'awaiting_manual', read: false, hasScreenshot: false, hasConsole: false })
    expect(typeof p1.data[0].createdAt).toBe('string')
    const p2 = await inbox.list('o1', 'ad1', { limit: 2, cursor: p1.nextCursor! })
    expect(p2.data.map((r) => r.id)).toEqual([ids[1], ids[0]])
    expect(p2.nextCursor).toBeNull()
    expect((await inbox.list('o1', 'ad1', { folder: 'queued' })).data.map((r) => r.id)).toEqual([queued])
    expect((await inbox.list('o1', 'ad1', { folder: 'all' })).data).toHaveLength(5)
    expect((await inbox.list('o1', 'ad1', { folder: 'failed' })).data).toEqual([])
    // Another Org's rows are never in this one's pages.
    expect((await inbox.list('o2', 'ad1', {})).data.every((r) => r.appId === 'a2')).toBe(true)
    expect((await inbox.list('o2', 'ad1', {})).eventSeq).toBe(0)
    expect((await inbox.list('o2', 'ad1', { appId: 'a1' })).data).toEqual([])
  })

  test('the spam folder: only spam, whatever its status, newest first; every other folder and the counts leave spam out', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await seedOrgApp(s, 'o2', 'a2')
    const ids = await reports(s, 4)
    const [received] = await reports(s, 1, 'received')
    const [theirs] = await reports(s, 1, 'received', 'o2', 'a2')
    for (const id of [ids[1], received, theirs]) await sql(s, `UPDATE feedback SET spam_score = 1, spam_reasons = '["honeypot"]', spam_marked_at = 5 WHERE id = ?`, [id])
    const inbox = s.store.inbox
    const spam = await inbox.list('o1', 'ad1', { folder: 'spam' })
    expect(spam.data.map((r) => r.id)).toEqual([received, ids[1]].sort().reverse())
    expect(spam.data[0].spam).toEqual({ score: 1, reasons: ['honeypot'], markedAt: new Date(5).toISOString() })
    expect((await inbox.list('o1', 'ad1', { folder: 'spam', q: 'nothing like this' })).data).toEqual([])
    expect((await inbox.list('o1', 'ad1', {})).data.map((r) => r.id)).toEqual([ids[3], ids[2], ids[0]])
    expect((await inbox.list('o1', 'ad1', {})).data[0].spam).toBeNull()
    expect((await inbox.list('o1', 'ad1', { folder: 'all' })).data).toHaveLength(3)
    const counts = await inbox.counts('o1', 'ad1')
    expect([counts.spam, counts.inbox, counts.awaiting_manual]).toEqual([2, 3, 3])
  })

  test('filters: App, dates, severity, mode, URL and text (case-insensitive), screenshot and console', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await seedOrgApp(s, 'o1', 'a9')
    const ids = await reports(s, 4)
    const [other] = await reports(s, 1, 'awaiting_manual', 'o1', 'a9')
    await sql(s, "UPDATE feedback SET severity = 'high', url = 'https://Shop.example/Cart', text = 'Checkout BUTTON broken' WHERE id = ?", [ids[0]])
    await sql(s, "UPDATE feedback SET submitted_mode = 'private', console_logs = '[{\"level\":\"error\"}]' WHERE id = ?", [ids[1]])
    await sql(s, `UPDATE feedback SET attachments = '[{"kind":"screenshot","key":"k"}]' WHERE id = ?`, [ids[2]])
    const inbox = s.store.inbox
    const idsOf = async (q: Parameters<typeof inbox.list>[2]) => (await inbox.list('o1', 'ad1', q)).data.map((r) => r.id)
    expect(await idsOf({ appId: 'a9' })).toEqual([other])
    expect(await idsOf({ severity: 'high' })).toEqual([ids[0]])
    expect(await idsOf({ mode: 'private' })).toEqual([ids[1]])
    expect(await idsOf({ urlContains: 'shop.EXAMPLE/cart' })).toEqual([ids[0]])
    expect(await idsOf({ q: 'button' })).toEqual([ids[0]])
    expect(await idsOf({ hasConsole: true })).toEqual([ids[1]])
    expect((await idsOf({ hasConsole: false })).sort()).toEqual([ids[0], ids[2], ids[3], other].sort())
    expect(await idsOf({ hasScreenshot: true })).toEqual([ids[2]])
    const shot = (await inbox.list('o1', 'ad1', { hasScreenshot: true })).data[0]
    expect(shot.hasScreenshot).toBe(true)
    // Dates: "to" is a whole day.
    expect(await idsOf({ appId: 'a1', from: new Date(T0 + DAY).toISOString().slice(0, 10), to: new Date(T0 + 2 * DAY).toISOString().slice(0, 10) })).toEqual([ids[2], ids[1]])
    // A filtered page shorter than the limit, scanned to the end: no next cursor.
    expect((await inbox.list('o1', 'ad1', { q: 'nothing like this' })).nextCursor).toBeNull()
  })

  test('text beyond ASCII is found whatever the case of the query: as typed, lower, upper, capitalized (SQLite\'s lower() folds ASCII only)', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const ids = await reports(s, 3)
    await sql(s, "UPDATE feedback SET text = 'Кнопка оплаты не работает на странице КОРЗИНЫ' WHERE id = ?", [ids[0]])
    await sql(s, "UPDATE feedback SET text = 'Élan: le bouton Payer ne répond pas' WHERE id = ?", [ids[1]])
    const idsOf = async (q: string) => (await s.store.inbox.list('o1', 'ad1', { q })).data.map((r) => r.id)
    for (const q of ['кнопка', 'КНОПКА', 'Кнопка', 'корзины', 'Корзины', 'оплаты']) expect({ q, ids: await idsOf(q) }).toEqual({ q, ids: [ids[0]] })
    for (const q of ['élan', 'ÉLAN', 'répond', 'RÉPOND']) expect({ q, ids: await idsOf(q) }).toEqual({ q, ids: [ids[1]] })
    expect(await idsOf('дом')).toEqual([])
  })

  test('read marks per admin: counted once, cross-Org ids ignored; unread again; folder counts of unread leads', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await seedOrgApp(s, 'o2', 'a2')
    const ids = await reports(s, 3)
    await reports(s, 2, 'queued')
    const [theirs] = await reports(s, 1, 'awaiting_manual', 'o2', 'a2')
    const inbox = s.store.inbox
    expect(await inbox.markRead('o1', 'ad1', [ids[0], ids[1], theirs, 'nope'], 5)).toBe(2)
    expect(await inbox.markRead('o1', 'ad1', [ids[0]], 6)).toBe(0)
    expect(await inbox.markRead('o2', 'ad1', [ids[2]], 6)).toBe(0)
    const page = await inbox.list('o1', 'ad1', {})
    expect(page.data.map((r) => [r.id, r.read])).toEqual([[ids[2], false], [ids[1], true], [ids[0], true]])
    // Another admin has their own marks.
    expect((await inbox.list('o1', 'ad2', {})).data.every((r) => !r.read)).toBe(true)
    const counts = await inbox.counts('o1', 'ad1')
    expect(counts).toEqual({ inbox: 1, awaiting_manual: 1, queued: 2, running: 0, pr_opened: 0, resolved: 0, failed: 0, spam: 0 } as never)
    await inbox.markUnread('o1', 'ad1', [ids[0], theirs])
    await inbox.markUnread('o2', 'ad1', [ids[1]])
    expect((await inbox.list('o1', 'ad1', {})).data.map((r) => r.read)).toEqual([false, true, false])
    expect((await inbox.counts('o1', 'ad1')).inbox).toBe(2)
    expect((await inbox.counts('o2', 'ad1')).inbox).toBe(1)
  })

  test("history: a report's events oldest first, by feedback_id and (legacy rows) by data; another Org finds nothing", async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await seedOrgApp(s, 'o2', 'a2')
    await insertReport(s, 'f1', 'awaiting_manual')
    const lc = s.store.lifecycle
    expect(await lc.move('f1', 'queued', { by: 'customer' })).toBe(true)
    await sql(s, "INSERT INTO events (id, org_id, app_id, seq, type, data, created_at) VALUES ('legacy', 'o1', 'a1', 50, 'feedback.status_changed', ?, 7)", [
      JSON.stringify({ feedbackId: 'f1', from: 'queued', to: 'archived' }),
    ])
    const inbox = s.store.inbox
    const h = await inbox.history('o1', 'f1')
    expect(h.map((e) => [e.seq, e.type, e.data.to])).toEqual([[1, 'feedback.status_changed', 'queued'], [50, 'feedback.status_changed', 'archived']])
    expect(h[1].createdAt).toBe(new Date(7).toISOString())
    expect(await inbox.history('o2', 'f1')).toEqual([])
  })
})
