/**
 * modules/git-hooks/repo.ts on both dialects: which report a pull request belongs to, replayed deliveries,
 * and the moves a merge, a close and a reopen make (the lead's duplicates following a merge), each with its events.
 */
import { expect, test } from 'bun:test'
import { describeEachDialect, type FreshStore } from '../dialects'
import { createGitHooksRepo, GIT_DELIVERY_RETENTION_MS } from '../../src/modules/git-hooks/repo'
import { createLifecycle } from '../../src/lifecycle/lifecycle'
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
  const open = async (s: FreshStore) => createGitHooksRepo(s.storage, createLifecycle(s.storage, s.clock), s.clock)

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
})
