/** modules/mail/repo.ts on both dialects: SMTP settings with audit rows, the outbox (one row per report, lease claims, settle, retry), unsubscribes, a user's reports. */
import { describe, expect, test } from 'bun:test'
import { storeOf } from '../dialects'
import { describeEachDialect, freshStore, type FreshStore } from '../dialects'
import { openPool } from '../../src/db/pg/client-options'
import { pgStorage } from '../../src/db/pg/storage'
import { type SmtpRow } from '../../src/modules/mail/repo'
import type { AuditEntry } from '../../src/modules/audit/entry'
import { insertReport, seedOrgApp, sql } from './store-fixtures'

const by = (action: string, targetId: string): AuditEntry => ({ orgId: 'o1', actor: 'cli', action, targetId, data: {} })
const smtp = (over: Partial<SmtpRow> = {}): SmtpRow => ({
  app_id: 'a1', org_id: 'o1', host: 'mail.example', port: 587, tls_mode: 'starttls', username: 'u', password_sealed: 'v1:pw', from_address: 'noreply@x.example', updated_at: 5, ...over,
})

async function resolvedOptIn(s: FreshStore, id: string, appId = 'a1', orgId = 'o1') {
  await insertReport(s, id, 'resolved', orgId, appId)
  await sql(s, 'UPDATE feedback SET notify_email_sealed = ? WHERE id = ?', [`v1:${id}`, id])
}

const outboxRow = (id: string, now = 100, appId = 'a1', leadId: string | null = id) => ({ feedbackId: id, orgId: 'o1', appId, emailSealed: `v1:${id}`, emailHash: 'h-ann', emailMasked: 'a***@x.example', leadId, needsConfirm: false, waitUntil: now + 10_000, now })

describeEachDialect('mail repo', (fresh) => {
  test('SMTP settings: put (upsert) and delete, each with its audit row', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const repo = s.store.mail
    expect(await repo.smtp('a1')).toBeNull()
    await repo.putSmtp(smtp(), [by('app.smtp_set', 'a1')])
    await repo.putSmtp(smtp({ host: 'smtp2.example', port: 465, tls_mode: 'tls', password_sealed: null }), [by('app.smtp_set', 'a1')])
    expect(await repo.smtp('a1')).toMatchObject({ host: 'smtp2.example', port: 465, tls_mode: 'tls', password_sealed: null, updated_at: 5 })
    expect(await repo.deleteSmtp('a1', [by('app.smtp_cleared', 'a1')])).toBe(true)
    expect(await repo.deleteSmtp('a1', [by('app.smtp_cleared', 'a1')])).toBe(false)
    expect((await sql<{ action: string }>(s, 'SELECT action FROM audit_log ORDER BY action')).map((a) => a.action)).toEqual(['app.smtp_cleared', 'app.smtp_set', 'app.smtp_set'])
  })

  test('due reports: resolved and opted in only; enqueue once, moving the address off the report', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const repo = s.store.mail
    await resolvedOptIn(s, 'f1')
    await insertReport(s, 'f2', 'resolved') // no opt-in
    await insertReport(s, 'f3', 'pr_opened')
    await sql(s, "UPDATE feedback SET notify_email_sealed = 'v1:f3' WHERE id = 'f3'") // opted in, not resolved yet
    expect((await repo.dueReports(10)).map((r) => r.id)).toEqual(['f1'])
    expect(await repo.enqueue(outboxRow('f1'))).toBe(true)
    expect(await repo.dueReports(10)).toEqual([])
    expect((await sql<{ n: string | null }>(s, "SELECT notify_email_sealed AS n FROM feedback WHERE id = 'f1'"))[0].n).toBeNull()
    // A second enqueue (another node, a retry) leaves the one row as it is.
    expect(await repo.enqueue({ ...outboxRow('f1'), emailMasked: 'other' })).toBe(false)
    expect((await sql(s, 'SELECT * FROM mail_outbox'))).toHaveLength(1)
    expect(await repo.outboxOf('o1', 'f1')).toMatchObject({ state: 'pending', attempts: 0, email_masked: 'a***@x.example' })
    expect(await repo.outboxOf('o2', 'f1')).toBeNull()
  })

  test('one mail per address per lead: a duplicate to an address the lead already mails is settled same_address; another address is queued', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const repo = s.store.mail
    for (const id of ['f1', 'f2', 'f3']) await resolvedOptIn(s, id)
    expect(await repo.enqueue(outboxRow('f1'))).toBe(true)
    expect(await repo.enqueue(outboxRow('f2', 100, 'a1', 'f1'))).toBe(false)
    expect(await repo.enqueue({ ...outboxRow('f3', 100, 'a1', 'f1'), emailHash: 'h-bob' })).toBe(true)
    expect(await repo.outboxOf('o1', 'f2')).toMatchObject({ state: 'same_address', email_sealed: null, settled_at: 100, lead_id: 'f1' })
    expect(await repo.outboxOf('o1', 'f3')).toMatchObject({ state: 'pending', lead_id: 'f1' })
    expect(await repo.dueReports(10)).toEqual([])
    expect((await repo.claim(100, 1000, 5)).map((r) => r.feedback_id).sort()).toEqual(['f1', 'f3'])
  })

  test('claims: one claimer per row while the lease lives; retry later; settle once', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const repo = s.store.mail
    await resolvedOptIn(s, 'f1')
    await repo.enqueue(outboxRow('f1', 100))
    const [a, b] = await Promise.all([repo.claim(100, 1000, 5), repo.claim(100, 1000, 5)])
    expect(a.length + b.length).toBe(1)
    expect([...a, ...b][0]).toMatchObject({ feedback_id: 'f1', attempts: 1, lease_until: 1100 })
    expect(await repo.claim(500, 1000, 5)).toEqual([]) // leased
    await repo.retryLater('f1', 5000, 'ECONNREFUSED')
    expect(await repo.claim(4999, 1000, 5)).toEqual([]) // not due yet
    const again = await repo.claim(5000, 1000, 5)
    expect(again).toHaveLength(1)
    expect(again[0]).toMatchObject({ attempts: 2, last_error: 'ECONNREFUSED' })
    expect(await repo.claim(7000, 1000, 5)).toHaveLength(1) // a lease that ran out (a dead node) is taken over
    expect(await repo.settle('f1', 'sent', null, 7100)).toBe(true)
    expect(await repo.settle('f1', 'failed', 'x', 7200)).toBe(false)
    expect(await repo.outboxOf('o1', 'f1')).toMatchObject({ state: 'sent', email_sealed: null, settled_at: 7100, lease_until: null })
    expect(await repo.claim(99999, 1000, 5)).toEqual([])
  })

  test('a claim leaves the Apps (and confirmation addresses) this node is still sending: the rows stay due for later', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await seedOrgApp(s, 'o1', 'a2')
    const repo = s.store.mail
    await resolvedOptIn(s, 'f1')
    await resolvedOptIn(s, 'f2', 'a2')
    await repo.enqueue(outboxRow('f1', 100))
    await repo.enqueue({ ...outboxRow('f2', 100, 'a2'), emailHash: 'h-bob' })
    expect((await repo.claim(100, 1000, 5, { apps: ['a1'] })).map((r) => r.feedback_id)).toEqual(['f2'])
    expect(await repo.claim(100, 1000, 5, { apps: ['a1'] })).toEqual([]) // f2 leased, f1 left
    expect(await repo.outboxOf('o1', 'f1')).toMatchObject({ attempts: 0, lease_until: null }) // untouched, not merely leased
    expect((await repo.claim(100, 1000, 5, { apps: [] })).map((r) => r.feedback_id)).toEqual(['f1'])
    // Confirmations: left by App, and by address (any App).
    for (const [id, app, hash] of [['f3', 'a1', 'h-cat'], ['f4', 'a2', 'h-dan'], ['f5', 'a2', 'h-eve']] as const) {
      await resolvedOptIn(s, id, app)
      await repo.ask({ feedbackId: id, appId: app, orgId: 'o1', emailHash: hash, emailSealed: `v1:${id}`, nonce: id.padEnd(32, '0'), now: 100, reaskBefore: 0 })
    }
    expect((await repo.claimConfirmations(200, 1000, 5, { apps: ['a1'], addresses: ['h-dan'] })).map((c) => c.id)).toEqual(['a2.h-eve'])
    expect((await repo.claimConfirmations(200, 1000, 5, { apps: [], addresses: ['h-dan'] })).map((c) => c.id)).toEqual(['a1.h-cat'])
    expect((await repo.claimConfirmations(200, 1000, 5)).map((c) => c.id)).toEqual(['a2.h-dan'])
  })

  test('claims never started are given back: the lease released and the attempt not counted, only while the lease is the one claimed', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const repo = s.store.mail
    for (const id of ['f1', 'f2']) {
      await resolvedOptIn(s, id)
      await repo.enqueue({ ...outboxRow(id, 100), emailHash: `h-${id}` })
    }
    const claimed = await repo.claim(100, 1000, 5)
    expect(claimed.map((r) => [r.feedback_id, r.attempts, Number(r.lease_until)])).toEqual([['f1', 1, 1100], ['f2', 1, 1100]])
    await repo.releaseClaims([{ id: 'f1', leaseUntil: 1100 }, { id: 'f2', leaseUntil: 999 }]) // f2: not the lease it holds
    expect(await repo.outboxOf('o1', 'f1')).toMatchObject({ attempts: 0, lease_until: null })
    expect(await repo.outboxOf('o1', 'f2')).toMatchObject({ attempts: 1, lease_until: 1100 })
    expect((await repo.claim(200, 1000, 5)).map((r) => r.feedback_id)).toEqual(['f1']) // at once, not after the lease
    // Given back to wait (its App's server just failed): not due before `notBefore`, still no attempt counted.
    await repo.releaseClaims([{ id: 'f1', leaseUntil: 1200 }], 5_000)
    expect(await repo.outboxOf('o1', 'f1')).toMatchObject({ attempts: 0, lease_until: null, next_attempt_at: 5_000 })
    expect((await repo.claim(4_999, 1000, 5)).map((r) => r.feedback_id)).toEqual(['f2']) // f2's lease ran out; f1 waits
    await repo.ask({ feedbackId: 'f1', appId: 'a1', orgId: 'o1', emailHash: 'h-ann', emailSealed: 'v1:f1', nonce: 'a'.padEnd(32, '0'), now: 100, reaskBefore: 0 })
    const [c] = await repo.claimConfirmations(300, 1000, 5)
    await repo.releaseConfirmationClaims([{ id: c.id, leaseUntil: 1300 }])
    expect((await repo.claimConfirmations(301, 1000, 5)).map((r) => [r.id, r.attempts])).toEqual([[c.id, 1]])
  })

  test('unsubscribe: recorded once per App and address, ends that address\'s pending mails of that App only', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await seedOrgApp(s, 'o1', 'a2')
    const repo = s.store.mail
    await resolvedOptIn(s, 'f1')
    await resolvedOptIn(s, 'f2', 'a2')
    await repo.enqueue(outboxRow('f1'))
    await repo.enqueue(outboxRow('f2', 100, 'a2'))
    expect(await repo.unsubscribe('a1', 'h-ann', 200)).toBe(true)
    expect(await repo.unsubscribe('a1', 'h-ann', 300)).toBe(false)
    expect(await repo.isUnsubscribed('a1', ['h-ann'])).toBe(true)
    expect(await repo.isUnsubscribed('a2', ['h-ann'])).toBe(false)
    expect(await repo.outboxOf('o1', 'f1')).toMatchObject({ state: 'unsubscribed', email_sealed: null })
    expect(await repo.outboxOf('o1', 'f2')).toMatchObject({ state: 'pending' })
  })

  test("a user's reports: private mode, that sub, that App, newest first, paged", async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await seedOrgApp(s, 'o1', 'a2')
    const repo = s.store.mail
    const ids = ['000000000000000000000001', '000000000000000000000002', '000000000000000000000003', '000000000000000000000004', '000000000000000000000005']
    for (const id of ids) await insertReport(s, id)
    await sql(s, "UPDATE feedback SET submitted_mode = 'private', external_user_id = 'u1' WHERE id IN (?, ?, ?)", [ids[0], ids[1], ids[2]])
    await sql(s, "UPDATE feedback SET submitted_mode = 'public', external_user_id = 'u1' WHERE id = ?", [ids[3]]) // self-declared: never listed
    await sql(s, "UPDATE feedback SET submitted_mode = 'private', external_user_id = 'u2' WHERE id = ?", [ids[4]])
    expect((await repo.reportsOf('a1', 'u1', undefined, 2)).map((r) => r.id)).toEqual([ids[2], ids[1], ids[0]])
    expect((await repo.reportsOf('a1', 'u1', ids[1], 2)).map((r) => r.id)).toEqual([ids[0]])
    expect(await repo.reportsOf('a2', 'u1', undefined, 10)).toEqual([])
    expect((await repo.reportsOf('a1', 'u2', undefined, 10)).map((r) => r.id)).toEqual([ids[4]])
    expect(await repo.appName('a1')).toBe('a1')
    expect(await repo.reportFacts(ids[0])).toMatchObject({ text: 'raw text', redactions: null, submitted_mode: 'private' })
  })

  test('double opt-in: one confirmation per App and address, asked again only once ended or expired; a single-use confirm releases the waiting mails', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const repo = s.store.mail
    for (const id of ['f1', 'f2', 'f3']) {
      await insertReport(s, id, 'new')
      await sql(s, "UPDATE feedback SET notify_email_sealed = ?, submitted_mode = 'public' WHERE id = ?", [`v1:${id}`, id])
    }
    await sql(s, "UPDATE feedback SET submitted_mode = 'private' WHERE id = 'f3'") // vouched for: never asked
    expect((await repo.dueAsks(10)).map((r) => r.id)).toEqual(['f1', 'f2'])
    const ask = (feedbackId: string, nonce: string, now: number) =>
      repo.ask({ feedbackId, appId: 'a1', orgId: 'o1', emailHash: 'h-ann', emailSealed: `v1:${feedbackId}`, nonce: nonce.padEnd(32, '0'), now, reaskBefore: now - 1000 })
    await ask('f1', 'a', 100)
    await ask('f2', 'b', 110) // the same address again: the pending one stays
    expect(await repo.dueAsks(10)).toEqual([])
    const [c] = await repo.claimConfirmations(200, 1000, 5)
    expect(c).toMatchObject({ id: 'a1.h-ann', state: 'pending', nonce: 'a'.padEnd(32, '0'), email_sealed: 'v1:f1', attempts: 1 })
    await repo.confirmationSent(c.id, 300)
    expect(await repo.confirmationsSent('a1', 'h-ann', 0, 0)).toEqual({ byApp: 1, toAddress: 1 })
    expect(await repo.confirmationsSent('a1', 'h-ann', 301, 301)).toEqual({ byApp: 0, toAddress: 0 })
    // A mail for this address queued while unconfirmed waits; the confirm releases it.
    await resolvedOptIn(s, 'f9')
    await repo.enqueue({ ...outboxRow('f9', 400), needsConfirm: true, waitUntil: 99_999 })
    expect(await repo.claim(500, 1000, 5)).toEqual([])
    expect(await repo.confirm('a1', 'h-ann', 'b'.padEnd(32, '0'), 600, 0)).toBe(false) // not the nonce sent
    expect(await repo.confirm('a1', 'h-ann', 'a'.padEnd(32, '0'), 600, 301)).toBe(false) // expired (sent before)
    expect(await repo.isConfirmed('a1', 'h-ann')).toBe(false)
    expect(await repo.confirm('a1', 'h-ann', 'a'.padEnd(32, '0'), 600, 0)).toBe(true)
    expect(await repo.confirm('a1', 'h-ann', 'a'.padEnd(32, '0'), 601, 0)).toBe(false) // single use
    expect(await repo.isConfirmed('a1', 'h-ann')).toBe(true)
    expect((await repo.claim(600, 1000, 5)).map((r) => r.feedback_id)).toEqual(['f9'])
    // Confirmed stays confirmed: a later ask changes nothing. An expired sent one is asked again.
    await ask('f1', 'c', 10_000)
    expect(await repo.isConfirmed('a1', 'h-ann')).toBe(true)
    await repo.ask({ feedbackId: 'f2', appId: 'a1', orgId: 'o1', emailHash: 'h-bob', emailSealed: 'v1:bob', nonce: 'd'.padEnd(32, '0'), now: 100, reaskBefore: 0 })
    const [b] = await repo.claimConfirmations(100, 1000, 5)
    await repo.confirmationSent(b.id, 100)
    await repo.ask({ feedbackId: 'f2', appId: 'a1', orgId: 'o1', emailHash: 'h-bob', emailSealed: 'v1:bob2', nonce: 'e'.padEnd(32, '0'), now: 150, reaskBefore: 50 })
    expect((await sql<{ state: string }>(s, "SELECT state FROM mail_confirmations WHERE id = 'a1.h-bob'"))[0].state).toBe('sent') // recent: not again
    await repo.ask({ feedbackId: 'f2', appId: 'a1', orgId: 'o1', emailHash: 'h-bob', emailSealed: 'v1:bob3', nonce: 'f'.padEnd(32, '0'), now: 5000, reaskBefore: 4000 })
    expect(await repo.claimConfirmations(5000, 1000, 5)).toMatchObject([{ id: 'a1.h-bob', nonce: 'f'.padEnd(32, '0'), email_sealed: 'v1:bob3' }])
    await repo.settleConfirmation('a1.h-bob', 'limited', 'x', 5001)
    expect((await sql<{ state: string; email_sealed: string | null }>(s, "SELECT state, email_sealed FROM mail_confirmations WHERE id = 'a1.h-bob'"))[0]).toEqual({ state: 'limited', email_sealed: null })
    expect(await repo.isUnsubscribed('a1', ['zz', 'h-ann'])).toBe(false)
    await repo.unsubscribe('a1', 'h-ann', 1)
    expect(await repo.isUnsubscribed('a1', ['zz', 'h-ann'])).toBe(true)
  })

  test('an idle claim takes no write lock (SQLite): another writer holding it does not block the mailer', async () => {
    const s = await fresh()
    if (s.dialect !== 'sqlite') return
    const { Database } = await import('bun:sqlite')
    const other = new Database(s.location)
    other.exec('PRAGMA busy_timeout = 0')
    other.exec('BEGIN IMMEDIATE')
    try {
      const repo = s.store.mail
      const t0 = performance.now()
      expect(await repo.claim(100, 1000, 5)).toEqual([])
      expect(performance.now() - t0).toBeLessThan(1000)
    } finally {
      other.exec('ROLLBACK')
      other.close()
    }
  })

  test('the reads use their partial indexes (SQLite plans): no scan of the feedback table', async () => {
    const s = await fresh()
    if (s.dialect !== 'sqlite') return
    const plan = (q: string) => (s.storage as any).sqlite.query(`EXPLAIN QUERY PLAN ${q}`).all().map((r: any) => r.detail).join(' | ')
    expect(plan("SELECT id FROM feedback WHERE app_id = 'a' AND external_user_id = 'u' AND submitted_mode = 'private' ORDER BY id DESC LIMIT 5")).toContain('feedback_private_sub_idx')
    expect(plan("SELECT id, org_id, app_id, notify_email_sealed FROM feedback WHERE notify_email_sealed IS NOT NULL AND status = 'resolved' ORDER BY id LIMIT 20")).toContain('feedback_notify_due_idx')
    expect(plan("SELECT id, org_id, app_id, notify_email_sealed FROM feedback WHERE notify_email_sealed IS NOT NULL AND notify_asked_at IS NULL AND submitted_mode = 'public' ORDER BY id LIMIT 20")).toContain('feedback_notify_ask_idx')
  })
})

/**
 * Cluster mode: a node whose clock runs ahead must not take a reporter mail (or a confirmation) another node
 * is sending, nor send one early: the database's clock decides (src/db/pg/db-clock.ts), as for jobs.
 */
describe('mail repo [pg]: the database clock decides the claims, never a node\'s', () => {
  const SKEW = 3 * 60_000
  test('a node 3 minutes ahead takes neither a leased mail nor one not due yet; a leased confirmation neither', async () => {
    const s = await freshStore('pg')
    await seedOrgApp(s)
    const pools = [openPool(s.location, 2), openPool(s.location, 2)]
    try {
      const [a, b] = pools.map((p) => storeOf(pgStorage(p), s.clock).mail)
      const dbNow = async () => Number((await sql<{ now: number }>(s, 'SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint AS now'))[0].now)
      await resolvedOptIn(s, 'f1')
      await a.enqueue(outboxRow('f1', (await dbNow()) - 1))
      const held = await a.claim(await dbNow(), 60_000, 5)
      expect(held.map((r) => r.feedback_id)).toEqual(['f1'])
      expect(held[0].lease_until).toBeLessThanOrEqual((await dbNow()) + 60_000)
      // On the fast node's clock the lease ran out; on the database's it did not.
      expect(await b.claim((await dbNow()) + SKEW, 60_000, 5)).toEqual([])
      // A retry due in a minute is not sent early by the fast node.
      await a.retryLater('f1', (await dbNow()) + 60_000, 'ECONNREFUSED')
      expect(await b.claim((await dbNow()) + SKEW, 60_000, 5)).toEqual([])
      await resolvedOptIn(s, 'f2')
      await a.ask({ feedbackId: 'f2', appId: 'a1', orgId: 'o1', emailHash: 'h-f2', emailSealed: 'v1:f2', nonce: 'n'.repeat(32), now: (await dbNow()) - 1, reaskBefore: 0 })
      expect(await a.claimConfirmations(await dbNow(), 60_000, 5)).toHaveLength(1)
      expect(await b.claimConfirmations((await dbNow()) + SKEW, 60_000, 5)).toEqual([])
    } finally {
      await Promise.all(pools.map((p) => p.end()))
    }
  })
})
