/**
 * modules/trackers/repo.ts on both dialects: a connection's cursor starting at the Org's newest event,
 * pending links and their one push job, the moves a tracker's news makes (closed → the lead and its
 * duplicates resolved with their events; reopened → back to awaiting_manual; the same state twice, a
 * replayed delivery, a deleted issue or a duplicate's link move nothing), and the polling list.
 */
import { expect, test } from 'bun:test'
import { describeEachDialect, type FreshStore } from '../dialects'
import { PUSH_DEBOUNCE_MS, type ConnectionWrite } from '../../src/modules/trackers/repo'
import { insertReport, seedOrgApp, sql } from './store-fixtures'
import { MIGRATIONS } from '../../src/db/migrations'
import { PG_MIGRATIONS } from '../../src/db/pg/migrations'
import { trackersCheck } from '../../src/modules/health/readiness'

const conn = (over: Partial<ConnectionWrite> = {}): ConnectionWrite => ({
  app_id: 'a1',
  org_id: 'o1',
  kind: 'github',
  api_url: 'https://api.github.com',
  project: 'acme/shop',
  account: null,
  token_sealed: 'sealed-token',
  webhook_secret_sealed: 'sealed-secret',
  actor: 'fixloop-bot',
  state_map: '{}',
  rules: '{"minDuplicates":2,"onAwaitingManual":[]}',
  created_at: 10,
  updated_at: 10,
  ...over,
})

const events = async (s: FreshStore) => (await sql<{ type: string; data: string }>(s, 'SELECT type, data FROM events ORDER BY seq')).map((e) => [e.type, JSON.parse(e.data)])
const statuses = async (s: FreshStore) => Object.fromEntries((await sql<{ id: string; status: string }>(s, 'SELECT id, status FROM feedback ORDER BY id')).map((r) => [r.id, r.status]))
const jobs = async (s: FreshStore) => sql<{ kind: string; feedback_id: string }>(s, 'SELECT kind, feedback_id FROM jobs ORDER BY id')
const runAfters = async (s: FreshStore) => (await sql<{ run_after: number }>(s, "SELECT run_after FROM jobs WHERE kind = 'tracker_push' ORDER BY id")).map((r) => Number(r.run_after))

/** A lead in `status` with duplicates in the given statuses, linked to tracker issue #7 (state open). */
async function seedLinked(s: FreshStore, status: string, dupStatuses: string[] = []) {
  await seedOrgApp(s)
  await insertReport(s, 'lead', status)
  await sql(s, "UPDATE feedback SET submitted_mode = 'private', external_user_id = 'u-lead', duplicate_count = ? WHERE id = 'lead'", [dupStatuses.length])
  for (const [i, st] of dupStatuses.entries()) {
    await insertReport(s, `dup${i}`, st)
    await sql(s, "UPDATE feedback SET duplicate_of_id = 'lead' WHERE id = ?", [`dup${i}`])
  }
  const repo = s.store.trackers
  await repo.putConnection(conn(), [])
  await repo.queuePushes('a1', { create: [{ feedbackId: 'lead', orgId: 'o1', kind: 'github', project: 'acme/shop' }], refresh: [] })
  await repo.saveIssue('lead', { issue_id: '7', issue_key: '#7', issue_url: 'https://github.com/acme/shop/issues/7', state_name: 'open', state_category: 'open', sync_state: 'synced', pushed_size: 1 + dupStatuses.length }, 20)
  await sql(s, 'DELETE FROM jobs')
  return repo
}

describeEachDialect('trackers repo', (fresh) => {
  test('a new connection reads events from the Org\'s newest seq on; a replaced one keeps its cursor; remove', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await sql(s, "INSERT INTO events (id, org_id, app_id, seq, type, data, created_at) VALUES ('e1', 'o1', 'a1', 41, 'feedback.received', '{}', 1)")
    const repo = s.store.trackers
    await repo.putConnection(conn(), [])
    expect((await repo.connection('a1'))!.event_cursor).toBe(41)
    expect(await repo.queuePushes('a1', { create: [], refresh: [], cursor: { from: 41, to: 45 } })).toBe(true)
    // Another node moved it first: nothing written.
    expect(await repo.queuePushes('a1', { create: [{ feedbackId: 'x', orgId: 'o1', kind: 'github', project: 'acme/shop' }], refresh: [], cursor: { from: 41, to: 50 } })).toBe(false)
    expect(await repo.issue('x')).toBeUndefined()
    await repo.setHealth('a1', { error: 'github answered 401', at: 5, retryAt: 9 })
    await repo.putConnection(conn({ project: 'acme/other', updated_at: 11 }), [])
    const row = (await repo.connection('a1'))!
    expect([row.event_cursor, row.project, row.created_at, row.updated_at, row.last_error]).toEqual([45, 'acme/other', 10, 11, null])
    expect(await repo.connectedOrgs()).toEqual(['o1'])
    expect(await repo.removeConnection('a1', [])).toBe(true)
    expect(await repo.removeConnection('a1', [])).toBe(false)
    expect(await repo.connection('a1')).toBeUndefined()
  })

  test('queuePushes: one pending link and one push job per lead, however often asked; refresh only links that exist; failing health listed', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await insertReport(s, 'lead', 'awaiting_manual')
    const repo = s.store.trackers
    await repo.putConnection(conn(), [])
    const link = { feedbackId: 'lead', orgId: 'o1', kind: 'github', project: 'acme/shop' }
    await repo.queuePushes('a1', { create: [link], refresh: ['other'] })
    await repo.queuePushes('a1', { create: [link], refresh: ['lead'] })
    expect(await jobs(s)).toEqual([{ kind: 'tracker_push', feedback_id: 'lead' }])
    expect((await repo.issue('lead'))!.sync_state).toBe('pending')
    expect(await repo.issue('other')).toBeUndefined()
    expect(await repo.pendingCount('a1')).toBe(1)
    await repo.saveIssue('lead', { issue_id: '7', sync_state: 'synced', attempts: 0 }, 30)
    expect(await repo.pendingCount('a1')).toBe(0)
    expect((await repo.issueByTrackerId({ app_id: 'a1', kind: 'github', project: 'acme/shop' }, '7'))!.feedback_id).toBe('lead')
    expect((await repo.issueByTrackerId({ app_id: 'a1', kind: 'github', project: 'ACME/Shop' }, '7'))!.feedback_id).toBe('lead')
    expect(await repo.issueByTrackerId({ app_id: 'a1', kind: 'gitlab', project: 'acme/shop' }, '7')).toBeUndefined()
    expect(await repo.issueByTrackerId({ app_id: 'a1', kind: 'github', project: 'acme/other' }, '7')).toBeUndefined()
    await repo.setHealth('a1', { error: 'github unreachable', at: 5, retryAt: 9 })
    expect(await repo.failing()).toEqual([{ app_id: 'a1', org_id: 'o1', kind: 'github', last_error: 'github unreachable', last_error_at: 5, retry_at: 9 }])
  })

  test('failing connections: the list stops at 100, the count by kind takes every one (the metric and /readyz\'s count stopped at 100)', async () => {
    const s = await fresh()
    const repo = s.store.trackers
    for (let i = 0; i < 130; i++) {
      const app = `app${String(i).padStart(3, '0')}`
      await seedOrgApp(s, 'o1', app)
      await repo.putConnection(conn({ app_id: app, kind: i % 3 === 0 ? 'gitlab' : 'github' }), [])
      // Every connection but the last five fails.
      if (i < 125) await repo.setHealth(app, { error: 'unreachable', at: 5, retryAt: null })
    }
    expect(await repo.failing()).toHaveLength(100)
    expect(await repo.failingByKind()).toEqual([
      { kind: 'github', n: 83 },
      { kind: 'gitlab', n: 42 },
    ])
    // /readyz: the count is every failing connection, the operator's list the first 100.
    const listed = (await repo.failing()).map((c) => ({ appId: c.app_id, kind: c.kind, lastError: c.last_error, lastErrorAt: null, retryAt: null }))
    expect(trackersCheck(listed, 125)).toMatchObject({ ok: false, failing: 125, reason: expect.stringContaining('125 issue-tracker connection(s) failing') })
    expect((trackersCheck(listed, 125) as { connections: unknown[] }).connections).toHaveLength(100)
  })

  test('closed: the lead and each duplicate that can follow resolved, status and feedback.resolved events; a replay and the same state again change nothing', async () => {
    const s = await fresh()
    const repo = await seedLinked(s, 'awaiting_manual', ['sanitized', 'archived', 'received'])
    const closed = { deliveryId: 'd1', feedbackId: 'lead', state: { name: 'closed', category: 'done' }, deleted: false, action: 'resolved' as const }
    expect(await repo.applyNews('a1', closed)).toEqual({ outcome: 'moved', moved: ['lead', 'dup0'] })
    expect(await statuses(s)).toEqual({ lead: 'resolved', dup0: 'resolved', dup1: 'archived', dup2: 'received' })
    expect(await events(s)).toEqual([
      ['feedback.status_changed', { feedbackId: 'lead', from: 'awaiting_manual', to: 'resolved' }],
      ['feedback.resolved', { feedbackId: 'lead', leadFeedbackId: 'lead', prUrl: null, externalUserId: 'u-lead' }],
      ['feedback.status_changed', { feedbackId: 'dup0', from: 'sanitized', to: 'resolved' }],
      ['feedback.resolved', { feedbackId: 'dup0', leadFeedbackId: 'lead', prUrl: null, externalUserId: null }],
    ])
    expect(await repo.applyNews('a1', closed)).toEqual({ outcome: 'replayed' })
    expect(await repo.applyNews('a1', { ...closed, deliveryId: 'd2' })).toEqual({ outcome: 'unchanged' })
    expect(await repo.applyNews('a1', { ...closed, deliveryId: null })).toEqual({ outcome: 'unchanged' })
    expect((await repo.issue('lead'))!.state_name).toBe('closed')
    expect(await events(s)).toHaveLength(4)
  })

  test('reopened: a resolved lead and its resolved duplicates back to awaiting_manual; a lead not resolved stays', async () => {
    const s = await fresh()
    const repo = await seedLinked(s, 'resolved', ['resolved', 'archived'])
    await sql(s, "UPDATE tracker_issues SET state_name = 'closed'")
    const reopen = { deliveryId: 'r1', feedbackId: 'lead', state: { name: 'open', category: 'open' }, deleted: false, action: 'reopen' as const }
    expect(await repo.applyNews('a1', reopen)).toEqual({ outcome: 'moved', moved: ['lead', 'dup0'] })
    expect(await statuses(s)).toEqual({ lead: 'awaiting_manual', dup0: 'awaiting_manual', dup1: 'archived' })
    expect((await events(s)).map((e) => e[0])).toEqual(['feedback.status_changed', 'feedback.status_changed'])
    // Reopened again while awaiting_manual (after a close fixloop did not act on): the state is recorded, nothing moves.
    await sql(s, "UPDATE tracker_issues SET state_name = 'closed'")
    expect(await repo.applyNews('a1', { ...reopen, deliveryId: 'r2' })).toEqual({ outcome: 'unchanged' })
    expect((await repo.issue('lead'))!.state_name).toBe('open')
  })

  test('ignore, a deleted issue, a lead merged into another: nothing moves; a deleted link is not synced or polled again', async () => {
    const s = await fresh()
    const repo = await seedLinked(s, 'awaiting_manual')
    expect(await repo.applyNews('a1', { deliveryId: 'i1', feedbackId: 'lead', state: { name: 'not_planned', category: 'canceled' }, deleted: false, action: 'ignore' })).toEqual({ outcome: 'unchanged' })
    expect((await repo.issue('lead'))!.state_name).toBe('not_planned')
    await insertReport(s, 'other', 'awaiting_manual')
    await sql(s, "UPDATE feedback SET duplicate_of_id = 'other' WHERE id = 'lead'")
    expect(await repo.applyNews('a1', { deliveryId: 'i2', feedbackId: 'lead', state: { name: 'closed', category: 'done' }, deleted: false, action: 'resolved' })).toEqual({ outcome: 'unchanged' })
    expect((await repo.openIssues('', 10)).map((r) => [r.feedback_id, r.cluster_size])).toEqual([['lead', 1]])
    expect(await repo.applyNews('a1', { deliveryId: 'i3', feedbackId: 'lead', state: { name: 'closed', category: 'done' }, deleted: true, action: 'ignore' })).toEqual({ outcome: 'deleted' })
    expect((await repo.issue('lead'))!.sync_state).toBe('deleted')
    expect(await repo.openIssues('', 10)).toEqual([])
    await repo.queuePushes('a1', { create: [], refresh: ['lead'] })
    expect(await jobs(s)).toEqual([])
    expect(await statuses(s)).toEqual({ lead: 'awaiting_manual', other: 'awaiting_manual' })
    expect(await events(s)).toEqual([])
  })

  test('eventsAfter: the App\'s events after a seq, oldest first; reportsOf', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await seedOrgApp(s, 'o1', 'a2')
    for (const [id, app, seq] of [['e1', 'a1', 1], ['e2', 'a2', 2], ['e3', 'a1', 3], ['e4', 'a1', 4]] as const) {
      await sql(s, "INSERT INTO events (id, org_id, app_id, seq, type, data, created_at) VALUES (?, 'o1', ?, ?, 'feedback.received', '{}', 1)", [id, app, seq])
    }
    const repo = s.store.trackers
    expect((await repo.eventsAfter('o1', 'a1', 1, 10)).map((e) => e.seq)).toEqual([3, 4])
    expect((await repo.eventsAfter('o1', 'a1', 0, 1)).map((e) => e.seq)).toEqual([1])
    await insertReport(s, 'r1', 'awaiting_manual')
    await sql(s, "UPDATE feedback SET severity = 'high' WHERE id = 'r1'")
    expect(await repo.reportsOf(['r1', 'nope'])).toEqual([{ id: 'r1', severity: 'high', duplicate_of_id: null }])
  })

  test('a link keeps its project: after the connection moved to another project it is not pushed, polled nor matched; a link of the new project with the same number lives beside it; moving back revives it', async () => {
    const s = await fresh()
    const repo = await seedLinked(s, 'awaiting_manual')
    expect((await repo.issue('lead'))!.project).toBe('acme/shop')
    await repo.putConnection(conn({ project: 'acme/other', updated_at: 11 }), [])
    // The other project's issue #7 is another issue: no delivery about it finds the old link, polling skips it, no push.
    expect(await repo.issueByTrackerId({ app_id: 'a1', kind: 'github', project: 'acme/other' }, '7')).toBeUndefined()
    expect(await repo.openIssues('', 10)).toEqual([])
    await repo.queuePushes('a1', { create: [], refresh: ['lead'] })
    expect(await jobs(s)).toEqual([])
    expect((await repo.issue('lead'))!.sync_state).toBe('synced')
    // A frozen link waits for nothing: the connection's health does not count it.
    await repo.saveIssue('lead', { sync_state: 'failing' }, 25)
    expect(await repo.pendingCount('a1')).toBe(0)
    // A lead of the new project gets issue #7 there: both links stand (the unique key has the project).
    await insertReport(s, 'newlead', 'awaiting_manual')
    await repo.queuePushes('a1', { create: [{ feedbackId: 'newlead', orgId: 'o1', kind: 'github', project: 'acme/other' }], refresh: [] })
    await repo.saveIssue('newlead', { issue_id: '7', issue_key: '#7', state_name: 'open', state_category: 'open', sync_state: 'synced', pushed_size: 1 }, 30)
    expect((await repo.issueByTrackerId({ app_id: 'a1', kind: 'github', project: 'acme/other' }, '7'))!.feedback_id).toBe('newlead')
    expect((await repo.openIssues('', 10)).map((r) => r.feedback_id)).toEqual(['newlead'])
    // Back to the first project (its name in another case is the same repository): the old link is live again.
    await repo.putConnection(conn({ project: 'Acme/Shop', updated_at: 12 }), [])
    expect((await repo.issueByTrackerId({ app_id: 'a1', kind: 'github', project: 'Acme/Shop' }, '7'))!.feedback_id).toBe('lead')
    expect((await repo.openIssues('', 10)).map((r) => r.feedback_id)).toEqual(['lead'])
    expect(await repo.pendingCount('a1')).toBe(1)
  })

  test('a replay under a new delivery id (the same body, so the same body hash) is a replay; another body under a seen id too', async () => {
    const s = await fresh()
    const repo = await seedLinked(s, 'awaiting_manual')
    const closed = { deliveryId: ['d1', 'sha256:aaaa'], feedbackId: 'lead', state: { name: 'closed', category: 'done' }, deleted: false, action: 'resolved' as const }
    expect((await repo.applyNews('a1', closed)).outcome).toBe('moved')
    // Reopened on the tracker (and in fixloop): the captured close replayed with a fresh id changes nothing.
    expect((await repo.applyNews('a1', { deliveryId: ['d2', 'sha256:bbbb'], feedbackId: 'lead', state: { name: 'open', category: 'open' }, deleted: false, action: 'reopen' })).outcome).toBe('moved')
    expect(await repo.applyNews('a1', { ...closed, deliveryId: ['d3', 'sha256:aaaa'] })).toEqual({ outcome: 'replayed' })
    expect(await repo.applyNews('a1', { ...closed, deliveryId: ['d1', 'sha256:cccc'] })).toEqual({ outcome: 'replayed' })
    expect(await statuses(s)).toEqual({ lead: 'awaiting_manual' })
    // Another App's deliveries are its own: the same keys there are news.
    await seedOrgApp(s, 'o1', 'a2')
    expect((await repo.applyNews('a2', { ...closed, deliveryId: ['d3', 'sha256:aaaa'] })).outcome).toBe('moved')
  })

  test('pushes of an existing issue are coalesced: one job, PUSH_DEBOUNCE_MS on, however many changes ask; a change during a running push queues one more', async () => {
    const s = await fresh()
    const repo = await seedLinked(s, 'awaiting_manual')
    const now = s.clock.now()
    for (let i = 0; i < 40; i++) {
      await repo.queuePushes('a1', { create: [], refresh: ['lead'] })
      s.clock.advance(100)
    }
    expect(await jobs(s)).toEqual([{ kind: 'tracker_push', feedback_id: 'lead' }])
    expect(await runAfters(s)).toEqual([now + PUSH_DEBOUNCE_MS])
    // A worker took it (leased): it may have read the lead before the next change, so that change queues one more, debounced too.
    await sql(s, "UPDATE jobs SET lease_until = ?, lease_owner = 'w' WHERE kind = 'tracker_push'", [s.clock.now() + 60_000])
    await repo.queuePushes('a1', { create: [], refresh: ['lead'] })
    await repo.queuePushes('a1', { create: [], refresh: ['lead'] })
    expect(await runAfters(s)).toEqual([now + PUSH_DEBOUNCE_MS, s.clock.now() + PUSH_DEBOUNCE_MS])
    // A new issue is created at once; a change while its creation runs adds nothing (the push re-reads the lead after creating).
    await insertReport(s, 'fresh', 'awaiting_manual')
    await sql(s, 'DELETE FROM jobs')
    await repo.queuePushes('a1', { create: [{ feedbackId: 'fresh', orgId: 'o1', kind: 'github', project: 'acme/shop' }], refresh: [] })
    expect(await runAfters(s)).toEqual([s.clock.now()])
    await sql(s, "UPDATE jobs SET lease_until = ?, lease_owner = 'w'", [s.clock.now() + 60_000])
    await repo.queuePushes('a1', { create: [], refresh: ['fresh'] })
    expect(await runAfters(s)).toEqual([s.clock.now()])
  })

  test('the migration gives existing links the App\'s current project (same kind only; none without a connection)', async () => {
    const s = await fresh()
    const repo = await seedLinked(s, 'awaiting_manual')
    await seedOrgApp(s, 'o1', 'a2')
    await insertReport(s, 'other-kind', 'awaiting_manual')
    await insertReport(s, 'no-conn', 'awaiting_manual', 'o1', 'a2')
    await sql(s, "INSERT INTO tracker_issues (feedback_id, org_id, app_id, kind, issue_id, sync_state, created_at, updated_at) VALUES ('other-kind', 'o1', 'a1', 'gitlab', '7', 'synced', 1, 1), ('no-conn', 'o1', 'a2', 'github', '7', 'synced', 1, 1)")
    await sql(s, "UPDATE tracker_issues SET project = ''")
    // The backfill statement of this dialect's migration (the last statement of the file), run again on rows as they were before it.
    const migration = (s.dialect === 'sqlite' ? MIGRATIONS : PG_MIGRATIONS).find((m) => m.name.endsWith('_tracker_link_project'))!
    await sql(s, migration.sql.split('--> statement-breakpoint').at(-1)!.replace(/^\s*--.*$/gm, '').trim())
    expect(await sql(s, 'SELECT feedback_id, project FROM tracker_issues ORDER BY feedback_id')).toEqual([
      { feedback_id: 'lead', project: 'acme/shop' },
      { feedback_id: 'no-conn', project: '' },
      { feedback_id: 'other-kind', project: '' },
    ])
    expect((await repo.issueByTrackerId({ app_id: 'a1', kind: 'github', project: 'acme/shop' }, '7'))!.feedback_id).toBe('lead')
  })
})
