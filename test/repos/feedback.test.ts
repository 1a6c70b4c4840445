/** modules/feedback/repo.ts on both dialects: the submission's one transaction, idempotency, list paging, get, customer moves. */
import { expect, test } from 'bun:test'
import { describeEachDialect, type FreshStore } from '../dialects'
import { type ReportDraft } from '../../src/modules/feedback/repo'
import { LIMITS } from '../../src/core/limits'
import { insertReport, seedOrgApp, sql } from './store-fixtures'

const draft = (text: string, orgId = 'o1', appId = 'a1'): ReportDraft => ({
  orgId, appId, severity: 'high', text, url: 'https://shop.example/x', userAgent: 'ua', viewport: '{"w":1}', consoleLogs: null,
  attachments: null, componentTarget: null, metadata: '{"k":1}', submittedMode: 'public', externalUserId: 'u1', email: null,
  submitterName: null, userContext: null,
})

async function setup(s: FreshStore) {
  await seedOrgApp(s, 'o1', 'a1')
  await seedOrgApp(s, 'o1', 'a2')
  await seedOrgApp(s, 'o2', 'b1')
  const lifecycle = s.store.lifecycle
  return s.store.feedback
}

const count = async (s: FreshStore, table: string) => Number((await sql<{ n: number }>(s, `SELECT count(*) AS n FROM ${table}`))[0].n)

describeEachDialect('feedback repo', (fresh) => {
  test('a submission stores the report in received, its event and its process job; get reads it back typed', async () => {
    const s = await fresh()
    const repo = await setup(s)
    const out = await repo.submit(draft('The total is NaN'), [], null)
    if (out.kind !== 'answered') throw new Error('expected an answer')
    expect(out.result).toMatchObject({ status: 201, replayed: false, body: { status: 'received' } })
    const id = out.result.body.id
    const row = await repo.get('o1', id)
    expect(row).toMatchObject({ id, orgId: 'o1', appId: 'a1', status: 'received', version: 0, text: 'The total is NaN', metadata: '{"k":1}', createdAt: s.clock.now(), updatedAt: s.clock.now(), mergeLocked: false, duplicateCount: 0 })
    expect(typeof row!.createdAt).toBe('number')
    expect(await repo.get('o2', id)).toBeUndefined()
    const events = await sql<{ type: string; data: string; seq: number }>(s, 'SELECT type, data, seq FROM events')
    expect(events.map((e) => [e.type, JSON.parse(e.data), Number(e.seq)])).toEqual([['feedback.received', { feedbackId: id, status: 'received' }, 1]])
    // Its job names the App (issue 38: the claim takes the Apps' queues round-robin).
    expect(await sql(s, 'SELECT kind, feedback_id, app_id FROM jobs')).toEqual([{ kind: 'process', feedback_id: id, app_id: 'a1' }])
  })

  test('spam at intake: the row with its mark, no process job, the event only when asked; mixed with plain submissions', async () => {
    const s = await fresh()
    const repo = await setup(s)
    const ids = async (outs: Awaited<ReturnType<typeof repo.submit>>[]) => outs.map((o) => (o.kind === 'answered' ? o.result.body.id : ''))
    const [quiet, plain, loud] = await ids(
      await Promise.all([
        repo.submit({ ...draft('bot text'), spam: { score: 1, reasons: '["honeypot"]', emitEvent: false, redactions: '{}' } }, [], null),
        repo.submit(draft('a real one'), [], null),
        repo.submit({ ...draft('bot text 2'), spam: { score: 0.9, reasons: '["too_fast","address_flood"]', emitEvent: true, redactions: '{}' } }, [], null),
      ]),
    )
    expect(await repo.get('o1', quiet)).toMatchObject({ status: 'received', spamScore: 1, spamReasons: '["honeypot"]', spamMarkedAt: s.clock.now() })
    expect(await repo.get('o1', plain)).toMatchObject({ spamScore: null, spamReasons: null, spamMarkedAt: null })
    expect(await sql(s, 'SELECT feedback_id, app_id FROM jobs')).toEqual([{ feedback_id: plain, app_id: 'a1' }])
    const events = (await sql<{ data: string }>(s, "SELECT data FROM events WHERE type = 'feedback.received' ORDER BY seq")).map((e) => JSON.parse(e.data).feedbackId)
    expect(events.sort()).toEqual([plain, loud].sort())
    // The list: spam hidden by default, alone with only, all with include.
    const listed = async (spam: 'exclude' | 'only' | 'include') => (await repo.list({ orgId: 'o1', includeDuplicates: false, spam, limit: 10 })).map((r) => r.id).sort()
    expect(await listed('exclude')).toEqual([plain])
    expect(await listed('only')).toEqual([quiet, loud].sort())
    expect(await listed('include')).toEqual([quiet, plain, loud].sort())
    expect(await repo.spamCount('a1')).toBe(2)
  })

  test('setSpam: "not spam" restores an intake spam report (event + process job, once); spam by hand only on undecided leads', async () => {
    const s = await fresh()
    const repo = await setup(s)
    const out = await repo.submit({ ...draft('bot'), spam: { score: 1, reasons: '["honeypot"]', emitEvent: false, redactions: '{}' } }, [], null)
    const id = out.kind === 'answered' ? out.result.body.id : ''
    expect(await repo.setSpam('o2', id, { spam: false, emitEvent: true }, 7)).toEqual({ kind: 'not_found' })
    expect(await repo.setSpam('o1', id, { spam: false, emitEvent: true }, 7)).toEqual({ kind: 'changed', appId: 'a1', status: 'received', reasons: '["honeypot"]' })
    expect(await repo.setSpam('o1', id, { spam: false, emitEvent: true }, 8)).toEqual({ kind: 'unchanged', appId: 'a1', status: 'received' })
    expect(await sql(s, 'SELECT kind, feedback_id, app_id FROM jobs')).toEqual([{ kind: 'process', feedback_id: id, app_id: 'a1' }])
    expect((await sql<{ type: string }>(s, 'SELECT type FROM events')).map((e) => e.type)).toEqual(['feedback.received'])
    expect(await repo.get('o1', id)).toMatchObject({ spamScore: null, spamMarkedAt: null, updatedAt: 7 })
    // By hand: a plain received report (its job stays: "not spam" then queues no second one).
    expect(await repo.setSpam('o1', id, { spam: true, score: 1, reasons: '["marked_by_hand"]' }, 9)).toMatchObject({ kind: 'changed', reasons: null })
    expect(await repo.setSpam('o1', id, { spam: false, emitEvent: true }, 10)).toMatchObject({ kind: 'changed' })
    expect(Number((await sql<{ n: number }>(s, 'SELECT count(*) AS n FROM jobs'))[0].n)).toBe(1)
    await insertReport(s, 'f-arch', 'archived')
    await insertReport(s, 'f-lead', 'awaiting_manual')
    await insertReport(s, 'f-dup', 'awaiting_manual')
    await sql(s, 'UPDATE feedback SET duplicate_of_id = ? WHERE id = ?', ['f-lead', 'f-dup'])
    await sql(s, 'UPDATE feedback SET duplicate_count = 1 WHERE id = ?', ['f-lead'])
    const mark = { spam: true as const, score: 1, reasons: '[]' }
    expect(await repo.setSpam('o1', 'f-arch', mark, 11)).toEqual({ kind: 'not_allowed', status: 'archived' })
    expect(await repo.setSpam('o1', 'f-lead', mark, 11)).toEqual({ kind: 'not_allowed', status: 'awaiting_manual' })
    expect(await repo.setSpam('o1', 'f-dup', mark, 11)).toEqual({ kind: 'duplicate', leadId: 'f-lead' })
  })

  test('all or nothing: a part that fails leaves no report, no event, no job, no key; the next submission works', async () => {
    const s = await fresh()
    const repo = await setup(s)
    await sql(s, 'ALTER TABLE jobs RENAME TO jobs_away')
    await expect(repo.submit(draft('lost'), [], { key: 'k1', requestHash: 'h1' })).rejects.toThrow()
    // Plain submissions too (on PostgreSQL they are stored together, by one statement per batch).
    const plain = await Promise.allSettled([repo.submit(draft('lost too'), [], null), repo.submit(draft('lost three'), [], null)])
    expect(plain.map((p) => p.status)).toEqual(['rejected', 'rejected'])
    await sql(s, 'ALTER TABLE jobs_away RENAME TO jobs')
    expect(await count(s, 'feedback')).toBe(0)
    expect(await count(s, 'events')).toBe(0)
    expect(await count(s, 'jobs')).toBe(0)
    expect(await count(s, 'idempotency_keys')).toBe(0)
    const out = await repo.submit(draft('kept'), [], { key: 'k1', requestHash: 'h1' })
    expect(out.kind).toBe('answered')
    expect(await count(s, 'feedback')).toBe(1)
    // The failed attempt took no seq.
    expect((await sql<{ seq: number }>(s, 'SELECT seq FROM events')).map((e) => Number(e.seq))).toEqual([1])
  })

  test('idempotency: the same key and body replay the first answer, another body is key_reused, an expired key is fresh', async () => {
    const s = await fresh()
    const repo = await setup(s)
    const first = await repo.submit(draft('once'), [], { key: 'k', requestHash: 'h' })
    if (first.kind !== 'answered') throw new Error('expected an answer')
    const again = await repo.submit(draft('once'), [], { key: 'k', requestHash: 'h' })
    expect(again).toEqual({ kind: 'answered', result: { status: 201, body: first.result.body, replayed: true } })
    expect(await repo.submit(draft('other'), [], { key: 'k', requestHash: 'h2' })).toEqual({ kind: 'key_reused' })
    // Keys are per App: the same key on another App is a new submission.
    const otherApp = await repo.submit(draft('once', 'o1', 'a2'), [], { key: 'k', requestHash: 'h' })
    expect(otherApp.kind === 'answered' && !otherApp.result.replayed).toBe(true)
    expect(await count(s, 'feedback')).toBe(2)
    s.clock.advance(LIMITS.idempotencyTtlMs)
    const later = await repo.submit(draft('other'), [], { key: 'k', requestHash: 'h2' })
    if (later.kind !== 'answered') throw new Error('expected an answer')
    expect(later.result.replayed).toBe(false)
    expect(later.result.body.id).not.toBe(first.result.body.id)
    expect(await count(s, 'feedback')).toBe(3)
    expect(await sql(s, "SELECT request_hash FROM idempotency_keys WHERE app_id = 'a1'")).toEqual([{ request_hash: 'h2' }])
  })

  test('concurrent submissions: one report per key, every other one stored, seqs without gaps', async () => {
    const s = await fresh()
    const repo = await setup(s)
    const keyed = await Promise.all(Array.from({ length: 5 }, () => repo.submit(draft('retry'), [], { key: 'same', requestHash: 'h' })))
    const plain = await Promise.all(Array.from({ length: 40 }, (_, i) => repo.submit(draft(`report ${i}`), [], null)))
    const keyedIds = new Set(keyed.map((o) => (o.kind === 'answered' ? o.result.body.id : 'reused')))
    expect(keyedIds.size).toBe(1)
    expect(keyed.filter((o) => o.kind === 'answered' && o.result.replayed)).toHaveLength(4)
    expect(new Set(plain.map((o) => (o.kind === 'answered' ? o.result.body.id : ''))).size).toBe(40)
    expect(await count(s, 'feedback')).toBe(41)
    const seqs = (await sql<{ seq: number }>(s, 'SELECT seq FROM events ORDER BY seq')).map((e) => Number(e.seq))
    expect(seqs).toEqual(Array.from({ length: 41 }, (_, i) => i + 1))
  })

  test('one turn of plain submissions from two Orgs: every report its row, event and job; each Org its own gapless seqs in id order; a bad one fails alone', async () => {
    const s = await fresh()
    const repo = await setup(s)
    await repo.submit(draft('first of o2', 'o2', 'b1'), [], null)
    // An App that does not exist breaks its row's foreign key: only that submission may fail.
    const drafts = Array.from({ length: 30 }, (_, i) => (i === 17 ? draft('no such app', 'o1', 'missing') : i % 3 === 0 ? draft(`o2 ${i}`, 'o2', 'b1') : draft(`o1 ${i}`)))
    const settled = await Promise.allSettled(drafts.map((d) => repo.submit(d, [], null)))
    expect(settled.map((r, i) => (r.status === 'rejected') === (i === 17))).toEqual(drafts.map(() => true))
    expect(await count(s, 'feedback')).toBe(30)
    expect(await count(s, 'jobs')).toBe(30)
    const events = await sql<{ org_id: string; seq: number; feedback_id: string; data: string }>(s, 'SELECT org_id, seq, feedback_id, data FROM events ORDER BY org_id, seq')
    for (const org of ['o1', 'o2']) {
      const mine = events.filter((e) => e.org_id === org)
      expect(mine.map((e) => Number(e.seq))).toEqual(mine.map((_, i) => i + 1))
      const ids = mine.map((e) => e.feedback_id)
      expect(ids).toEqual([...ids].sort())
      for (const e of mine) expect(JSON.parse(e.data)).toEqual({ feedbackId: e.feedback_id, status: 'received' })
    }
    expect(events.filter((e) => e.org_id === 'o2')).toHaveLength(11)
    const jobs = await sql<{ feedback_id: string }>(s, "SELECT feedback_id FROM jobs WHERE kind = 'process'")
    expect(new Set(jobs.map((j) => j.feedback_id))).toEqual(new Set(events.map((e) => e.feedback_id)))
  })

  test('the uploads a submission references become its own; one another report took first stays with that report', async () => {
    const s = await fresh()
    const repo = await setup(s)
    const uploads = s.store.uploads
    for (const key of ['a1/x', 'a1/y']) {
      await uploads.insert({ key, appId: 'a1', orgId: 'o1', kind: 'attachment', contentType: 'image/png', byteSize: 3, filename: null, createdAt: 1, expiresAt: 2 })
    }
    const one = await repo.submit(draft('with x'), ['a1/x'], null)
    const two = await repo.submit(draft('with x and y'), ['a1/x', 'a1/y'], null)
    if (one.kind !== 'answered' || two.kind !== 'answered') throw new Error('expected answers')
    expect((await uploads.byKey('a1/x'))?.feedback_id).toBe(one.result.body.id)
    expect((await uploads.byKey('a1/y'))?.feedback_id).toBe(two.result.body.id)
  })

  test('list: newest first, cursor paging, filters by status, App and duplicates; another Org finds nothing', async () => {
    const s = await fresh()
    const repo = await setup(s)
    const ids: string[] = []
    for (let i = 0; i < 7; i++) {
      const out = await repo.submit(draft(`r${i}`, 'o1', i % 2 ? 'a2' : 'a1'), [], null)
      if (out.kind === 'answered') ids.push(out.result.body.id)
      s.clock.advance(1000)
    }
    await repo.submit(draft('other org', 'o2', 'b1'), [], null)
    const newest = [...ids].reverse()
    const base = { orgId: 'o1', includeDuplicates: false }
    const page1 = await repo.list({ ...base, limit: 3 })
    // One row past the page tells there is another.
    expect(page1.map((r) => r.id)).toEqual(newest.slice(0, 4))
    const page2 = await repo.list({ ...base, limit: 3, cursor: newest[2] })
    expect(page2.map((r) => r.id)).toEqual(newest.slice(3, 7))
    expect(page1[0]).toMatchObject({ appId: 'a1', status: 'received', submittedMode: 'public', externalUserId: 'u1', severity: 'high', text: 'r6', duplicateCount: 0, duplicateOfId: null, redactions: null, version: 0 })
    expect(typeof page1[0].createdAt).toBe('number')
    expect((await repo.list({ ...base, appId: 'a2', limit: 10 })).map((r) => r.id)).toEqual([ids[5], ids[3], ids[1]])
    await sql(s, "UPDATE feedback SET status = 'archived' WHERE id = ?", [ids[0]])
    await sql(s, 'UPDATE feedback SET duplicate_of_id = ? WHERE id = ?', [ids[6], ids[4]])
    await sql(s, 'UPDATE feedback SET duplicate_count = 1 WHERE id = ?', [ids[6]])
    expect((await repo.list({ ...base, status: 'archived', limit: 10 })).map((r) => r.id)).toEqual([ids[0]])
    expect((await repo.list({ ...base, status: 'archived', appId: 'a2', limit: 10 })).map((r) => r.id)).toEqual([])
    expect((await repo.list({ ...base, limit: 10 })).map((r) => r.id)).not.toContain(ids[4])
    expect((await repo.list({ ...base, includeDuplicates: true, limit: 10 })).map((r) => r.id)).toContain(ids[4])
    expect((await repo.duplicatesOf('o1', ids[6], 5)).map((r) => r.id)).toEqual([ids[4]])
    expect(await repo.duplicatesOf('o2', ids[6], 5)).toEqual([])
    // Another Org's list, and another Org's App id, find nothing of o1.
    expect((await repo.list({ orgId: 'o2', includeDuplicates: true, limit: 50 })).map((r) => r.text)).toEqual(['other org'])
    expect(await repo.list({ orgId: 'o2', appId: 'a1', includeDuplicates: true, limit: 50 })).toEqual([])
  })

  test('status reasons read the connection and the batch window', async () => {
    const s = await fresh()
    const repo = await setup(s)
    expect(await repo.hasRepoConnection('a1')).toBe(false)
    expect(await repo.batchClosesAt('a1')).toBeNull()
    await sql(s, "INSERT INTO repo_connections (app_id, git_url, host_kind, agent_provider, timeout_seconds, pr_mode, max_files, max_lines, runs_per_day, max_cost_usd_per_month, created_at, updated_at) VALUES ('a1', 'https://g/x.git', 'none', 'command', 60, 'branch', 1, 1, 1, 1, 1, 1)")
    await s.store.lifecycle.enqueue('batch_release', { appId: 'a1' }, 90_000)
    expect(await repo.hasRepoConnection('a1')).toBe(true)
    expect(await repo.hasRepoConnection('a2')).toBe(false)
    expect(await repo.batchClosesAt('a1')).toBe(90_000)
  })

  test('customer moves: moved with its event, not_found for another Org, duplicate names its lead, a forbidden move throws', async () => {
    const s = await fresh()
    const repo = await setup(s)
    await insertReport(s, 'f1', 'awaiting_manual')
    await insertReport(s, 'f2', 'awaiting_manual')
    await sql(s, "UPDATE feedback SET duplicate_of_id = 'f1' WHERE id = 'f2'")
    expect(await repo.customerMove('o2', 'f1', 'archived')).toEqual({ kind: 'not_found' })
    expect(await repo.customerMove('o1', 'nope', 'archived')).toEqual({ kind: 'not_found' })
    expect(await repo.customerMove('o1', 'f2', 'archived')).toEqual({ kind: 'duplicate', leadId: 'f1' })
    expect(await repo.customerMove('o1', 'f1', 'queued')).toEqual({ kind: 'moved' })
    expect((await repo.get('o1', 'f1'))).toMatchObject({ status: 'queued', version: 1 })
    expect(await sql(s, 'SELECT kind, feedback_id FROM jobs')).toEqual([{ kind: 'agent', feedback_id: 'f1' }])
    await expect(repo.customerMove('o1', 'f1', 'queued')).rejects.toMatchObject({ code: 'invalid_transition' })
    expect(await count(s, 'events')).toBe(1)
  })

  test('concurrent customer moves of one report: exactly one wins, the others see the move made and are refused', async () => {
    const s = await fresh()
    const repo = await setup(s)
    await insertReport(s, 'f1', 'awaiting_manual')
    await insertReport(s, 'f2', 'awaiting_manual')
    for (const [id, to] of [['f1', 'archived'], ['f2', 'queued']] as const) {
      const results = await Promise.allSettled([repo.customerMove('o1', id, to), repo.customerMove('o1', id, to), repo.customerMove('o1', id, to)])
      expect(results.filter((r) => r.status === 'fulfilled' && r.value.kind === 'moved')).toHaveLength(1)
      // Each read the row under the lock the winner held, after it committed: the move is no longer allowed.
      expect(results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason.code)).toEqual(['invalid_transition', 'invalid_transition'])
      expect((await repo.get('o1', id))!.version).toBe(1)
    }
    expect(await count(s, 'events')).toBe(2)
    expect(await count(s, 'jobs')).toBe(1)
  })
})
