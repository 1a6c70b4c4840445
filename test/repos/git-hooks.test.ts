/**
 * modules/git-hooks/repo.ts on both dialects: which report a pull request belongs to, replayed deliveries,
 * and the moves a merge, a close and a reopen make (the lead's duplicates following a merge), each with its events.
 */
import { expect, test } from 'bun:test'
import { describeEachDialect, type FreshStore } from '../dialects'
import { deliveryKeys, GIT_DELIVERY_RETENTION_MS, PENDING_REVIEWS_MAX } from '../../src/modules/git-hooks/repo'
import { deliveryIdOr } from '../../src/core/outbound'
import { insertReport, seedOrgApp, sql } from './store-fixtures'

const PR = 'https://git.example/acme/shop/pull/7'

/** A lead `lead` in pr_opened with the run that opened PR, and duplicates in the given statuses. */
async function seedPr(s: FreshStore, dupStatuses: string[] = []): Promise<void> {
  await seedOrgApp(s)
  await seedOrgApp(s, 'o1', 'a2')
  await insertReport(s, 'lead', 'pr_opened')
  await sql(s, "UPDATE feedback SET merge_request_url = ?, submitted_mode = 'private', external_user_id = 'user-lead', email = 'lead@example.com' WHERE id = 'lead'", [PR])
  await sql(s, "INSERT INTO agent_runs (id, org_id, app_id, feedback_id, provider, status, branch, timings, pr_url, created_at) VALUES ('run1', 'o1', 'a1', 'lead', 'command', 'succeeded', 'fixloop/lead', '{}', ?, 1)", [PR])
  for (const [i, status] of dupStatuses.entries()) {
    await insertReport(s, `dup${i}`, status)
    await sql(s, `UPDATE feedback SET duplicate_of_id = 'lead', merge_request_url = ?, external_user_id = 'user-${i}', submitted_mode = ? WHERE id = 'dup${i}'`, [PR, i === 0 ? 'private' : 'public'])
  }
}
const events = async (s: FreshStore) =>
  (await sql<{ type: string; data: string }>(s, 'SELECT type, data FROM events ORDER BY seq')).map((e) => [e.type, JSON.parse(e.data)])
const statuses = async (s: FreshStore) => Object.fromEntries((await sql<{ id: string; status: string }>(s, 'SELECT id, status FROM feedback ORDER BY id')).map((r) => [r.id, r.status]))

describeEachDialect('git-hooks repo', (fresh) => {
  const open = async (s: FreshStore) => s.store.gitHooks

  test('reportOfPr: the lead whose run opened the PR; not another App, a duplicate, or a URL no run opened', async () => {
    const s = await fresh()
    await seedPr(s, ['sanitized'])
    const repo = await open(s)
    expect(await repo.reportOfPr('a1', PR)).toEqual({ id: 'lead', orgId: 'o1', appId: 'a1', status: 'pr_opened', prUrl: PR })
    expect(await repo.reportOfPr('a2', PR)).toBeUndefined()
    expect(await repo.reportOfPr('a1', `${PR}0`)).toBeUndefined()
    expect(await repo.reportOfPr('a1', PR.toUpperCase())).toBeUndefined()
  })

  test('merged: the lead and every duplicate that can follow are resolved, one status event and one feedback.resolved each; externalUserId only in private mode', async () => {
    const s = await fresh()
    await seedPr(s, ['sanitized', 'awaiting_manual', 'archived', 'received'])
    const repo = await open(s)
    const report = (await repo.reportOfPr('a1', PR))!
    expect(await repo.receive('a1', 'd1', { report, change: 'merged' })).toEqual({ outcome: 'moved', moved: ['lead', 'dup0', 'dup1'] })
    expect(await statuses(s)).toEqual({ lead: 'resolved', dup0: 'resolved', dup1: 'resolved', dup2: 'archived', dup3: 'received' })
    expect(await events(s)).toEqual([
      ['feedback.status_changed', { feedbackId: 'lead', from: 'pr_opened', to: 'resolved' }],
      ['feedback.resolved', { feedbackId: 'lead', leadFeedbackId: 'lead', prUrl: PR, externalUserId: 'user-lead' }],
      ['feedback.status_changed', { feedbackId: 'dup0', from: 'sanitized', to: 'resolved' }],
      ['feedback.resolved', { feedbackId: 'dup0', leadFeedbackId: 'lead', prUrl: PR, externalUserId: 'user-0' }],
      ['feedback.status_changed', { feedbackId: 'dup1', from: 'awaiting_manual', to: 'resolved' }],
      ['feedback.resolved', { feedbackId: 'dup1', leadFeedbackId: 'lead', prUrl: PR, externalUserId: null }],
    ])
    // Never the text or the email.
    expect(JSON.stringify(await events(s))).not.toContain('raw text')
    expect(JSON.stringify(await events(s))).not.toContain('@example.com')
  })

  test('a replayed delivery id changes nothing; a merge for a report no longer in pr_opened changes nothing', async () => {
    const s = await fresh()
    await seedPr(s)
    const repo = await open(s)
    const report = (await repo.reportOfPr('a1', PR))!
    expect((await repo.receive('a1', 'd1', { report, change: 'merged' })).outcome).toBe('moved')
    expect(await repo.receive('a1', 'd1', { report, change: 'merged' })).toEqual({ outcome: 'replayed' })
    expect(await repo.receive('a1', 'd2', { report, change: 'merged' })).toEqual({ outcome: 'unchanged' })
    expect(await repo.receive('a1', 'd3', { report, change: 'closed' })).toEqual({ outcome: 'unchanged' })
    expect(await events(s)).toHaveLength(2)
    // The same delivery id for another App is another delivery.
    expect(await repo.receive('a2', 'd1', null)).toEqual({ outcome: 'unchanged' })
  })

  test('a delivery replayed under a new id is a replay by its body hash: a close does not close the reopened PR again, a review is not queued twice', async () => {
    const s = await fresh()
    await seedPr(s)
    const repo = await open(s)
    const body = new TextEncoder().encode('{"action":"closed"}')
    const close = deliveryKeys('id-1', body)
    expect(close).toHaveLength(2)
    expect((await repo.receive('a1', close, { report: (await repo.reportOfPr('a1', PR))!, change: 'closed' })).outcome).toBe('moved')
    expect((await repo.receive('a1', deliveryKeys('id-2', new TextEncoder().encode('{"action":"reopened"}')), { report: (await repo.reportOfPr('a1', PR))!, change: 'reopened' })).outcome).toBe('moved')
    expect(await repo.receive('a1', deliveryKeys('id-3', body), { report: (await repo.reportOfPr('a1', PR))!, change: 'closed' })).toEqual({ outcome: 'replayed' })
    expect(await statuses(s)).toEqual({ lead: 'pr_opened' })
    const report = (await repo.reportOfPr('a1', PR))!
    const review = new TextEncoder().encode('{"comment":"/fixloop handle the empty cart"}')
    expect((await repo.queueReview('a1', deliveryKeys('c-1', review), { id: 'pr0000000000000000000001', report, text: 'handle the empty cart', author: 'rev' })).outcome).toBe('review_queued')
    expect(await repo.queueReview('a1', deliveryKeys('c-2', review), { id: 'pr0000000000000000000002', report, text: 'handle the empty cart', author: 'rev' })).toEqual({ outcome: 'replayed' })
    expect(await sql(s, 'SELECT COUNT(*) AS n FROM pending_reviews').then((r: any[]) => Number(r[0].n))).toBe(1)
    // With no id (an old host): the body's hash is its only key, remembered once.
    expect((await repo.receive('a2', deliveryKeys(deliveryIdOr(null, body), body), null)).outcome).toBe('unchanged')
    expect((await repo.receive('a2', deliveryKeys(deliveryIdOr(null, body), body), null)).outcome).toBe('replayed')
  })

  test('closed → awaiting_manual keeping the URL; reopened → pr_opened; no feedback.resolved', async () => {
    const s = await fresh()
    await seedPr(s, ['sanitized'])
    const repo = await open(s)
    const report = (await repo.reportOfPr('a1', PR))!
    expect(await repo.receive('a1', 'c1', { report, change: 'closed' })).toEqual({ outcome: 'moved', moved: ['lead'] })
    expect(await sql(s, "SELECT status, merge_request_url FROM feedback WHERE id = 'lead'")).toEqual([{ status: 'awaiting_manual', merge_request_url: PR }])
    const again = (await repo.reportOfPr('a1', PR))!
    expect(again.status).toBe('awaiting_manual')
    expect(await repo.receive('a1', 'r1', { report: again, change: 'reopened' })).toEqual({ outcome: 'moved', moved: ['lead'] })
    expect(await sql(s, "SELECT status, merge_request_url FROM feedback WHERE id = 'lead'")).toEqual([{ status: 'pr_opened', merge_request_url: PR }])
    expect((await events(s)).map((e) => e[0])).toEqual(['feedback.status_changed', 'feedback.status_changed'])
    expect(await statuses(s)).toMatchObject({ dup0: 'sanitized' })
  })

  test('deliveries older than the retention are forgotten as new ones arrive', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const repo = await open(s)
    await repo.receive('a1', 'old', null)
    s.clock.advance(GIT_DELIVERY_RETENTION_MS + 1)
    await repo.receive('a1', 'new', null)
    expect((await sql<{ delivery_id: string }>(s, 'SELECT delivery_id FROM git_host_deliveries')).map((r) => r.delivery_id)).toEqual(['new'])
  })

  test('queueReview: stored with the delivery and a review job, positions count up, a replay stores nothing, a full queue refuses', async () => {
    const s = await fresh()
    await seedPr(s)
    const repo = await open(s)
    const report = (await repo.reportOfPr('a1', PR))!
    expect(await repo.queueReview('a1', 'r1', { id: 'pr0000000000000000000001', report, text: 'handle the empty cart', author: 'rev' })).toEqual({ outcome: 'review_queued', position: 1 })
    expect(await repo.queueReview('a1', 'r2', { id: 'pr0000000000000000000002', report, text: 'and the coupon', author: null })).toEqual({ outcome: 'review_queued', position: 2 })
    expect(await repo.queueReview('a1', 'r1', { id: 'pr0000000000000000000003', report, text: 'replayed', author: null })).toEqual({ outcome: 'replayed' })
    expect(await sql(s, 'SELECT id, org_id, app_id, feedback_id, pr_url, text, author FROM pending_reviews ORDER BY id')).toEqual([
      { id: 'pr0000000000000000000001', org_id: 'o1', app_id: 'a1', feedback_id: 'lead', pr_url: PR, text: 'handle the empty cart', author: 'rev' },
      { id: 'pr0000000000000000000002', org_id: 'o1', app_id: 'a1', feedback_id: 'lead', pr_url: PR, text: 'and the coupon', author: null },
    ])
    expect(await sql(s, "SELECT kind, feedback_id FROM jobs WHERE kind = 'review'")).toEqual([{ kind: 'review', feedback_id: 'lead' }, { kind: 'review', feedback_id: 'lead' }])
    for (let i = 3; i <= PENDING_REVIEWS_MAX; i++) expect((await repo.queueReview('a1', `r${i}`, { id: `pr${String(i).padStart(22, '0')}`, report, text: 'x', author: null })).outcome).toBe('review_queued')
    const full = await repo.queueReview('a1', 'rfull', { id: 'pr9999999999999999999999', report, text: 'one too many', author: null })
    expect(full).toMatchObject({ outcome: 'review_refused' })
    expect((await sql<{ n: number }>(s, 'SELECT COUNT(*) AS n FROM pending_reviews'))[0]!.n).toEqual(PENDING_REVIEWS_MAX)
    // The refused delivery is remembered too: its redelivery is a replay.
    expect(await repo.queueReview('a1', 'rfull', { id: 'pr9999999999999999999998', report, text: 'again', author: null })).toEqual({ outcome: 'replayed' })
  })

  test('agent-runs: waiting reviews oldest first; a review run\'s start takes the ones it combined, in its transaction; a start that finds the report moved takes none; drop; the API read is Org-scoped', async () => {
    const s = await fresh()
    await seedPr(s)
    await insertReport(s, 'other', 'pr_opened')
    const lifecycle = s.store.lifecycle
    const hooks = s.store.gitHooks
    const runs = s.store.agentRuns
    const report = (await hooks.reportOfPr('a1', PR))!
    await hooks.queueReview('a1', 'r2', { id: 'pr0000000000000000000002', report, text: 'second', author: 'b' })
    await hooks.queueReview('a1', 'r1', { id: 'pr0000000000000000000001', report, text: 'first', author: 'a' })
    const waiting = await runs.pendingReviews('lead')
    expect(waiting.map((w) => [w.text, w.author, w.pr_url])).toEqual([['first', 'a', PR], ['second', 'b', PR]])
    expect(Number(waiting[0]!.received_at)).toBe(s.clock.now())
    expect((await runs.pendingReviewsFor('o1', 'lead')).map((w) => [w.author, Number(w.receivedAt)])).toEqual([['a', s.clock.now()], ['b', s.clock.now()]])
    expect(await runs.pendingReviewsFor('o2', 'lead')).toEqual([])
    const run = (id: string, feedbackId: string) => ({ id, orgId: 'o1', appId: 'a1', feedbackId, provider: 'command', model: null, status: 'running' as const, branch: `fixloop/${feedbackId}`, timings: '{}', startedAt: 1, createdAt: 1, nodeId: null, reviewText: 'first\n---\nsecond' })
    const started = { type: 'agent_run.started' as const, data: { runId: 'x', feedbackId: 'lead', provider: 'command' } }
    // The report is not in pr_opened: nothing is written, the reviews still wait.
    await sql(s, "UPDATE feedback SET status = 'awaiting_manual' WHERE id = 'lead'")
    expect(await runs.startReviewRun(run('run2', 'lead'), started, waiting.map((w) => w.id))).toBe(false)
    expect(await runs.pendingReviews('lead')).toHaveLength(2)
    await sql(s, "UPDATE feedback SET status = 'pr_opened' WHERE id = 'lead'")
    expect(await runs.startReviewRun(run('run2', 'lead'), started, waiting.map((w) => w.id))).toBe(true)
    expect(await runs.pendingReviews('lead')).toEqual([])
    expect(await sql(s, "SELECT trigger, review_text FROM agent_runs WHERE id = 'run2'")).toEqual([{ trigger: 'review', review_text: 'first\n---\nsecond' }])
    // The App's slot is taken: another start is app_busy and takes nothing.
    const lone = await hooks.queueReview('a1', 'r3', { id: 'pr0000000000000000000003', report: { ...report, id: 'other' }, text: 'other', author: null })
    expect(lone).toMatchObject({ outcome: 'review_queued', position: 1 })
    expect(await runs.startReviewRun(run('run3', 'other'), started, ['pr0000000000000000000003'])).toBe('app_busy')
    expect(await runs.pendingReviews('other')).toHaveLength(1)
    await runs.dropPendingReviews(['pr0000000000000000000003'])
    expect(await runs.pendingReviews('other')).toEqual([])
  })
})
