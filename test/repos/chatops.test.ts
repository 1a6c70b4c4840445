/** modules/chatops/repo.ts on both dialects: connections with their audit rows, cursors, threads, allowed users, reads for the notifier and the slash command. */
import { describe, expect, test } from 'bun:test'
import { storeOf } from '../dialects'
import { describeEachDialect, freshStore, type FreshStore } from '../dialects'
import { openPool } from '../../src/db/pg/client-options'
import { pgStorage } from '../../src/db/pg/storage'
import { type ChatopsRepo } from '../../src/modules/chatops/repo'
import type { AuditEntry } from '../../src/modules/audit/entry'
import { insertReport, seedOrgApp, sql } from './store-fixtures'

const by = (action: string, targetId: string, orgId = 'o1'): AuditEntry => ({ orgId, actor: 'cli', action, targetId, data: {} })

async function connect(s: FreshStore, repo: ChatopsRepo, id = 'c1', orgId = 'o1') {
  await repo.insert(
    { id, org_id: orgId, app_id: null, channel: 'C0TRIAGE', bot_token_sealed: 'tok', signing_secret_sealed: 'sec', event_types: '["feedback.status_changed"]', created_at: s.clock.now() },
    [by('slack.connected', id, orgId)],
  )
}

describeEachDialect('chatops repo', (fresh) => {
  test('a connection starts at the Org head, with its audit row; reads are Org-scoped; disconnect once', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await seedOrgApp(s, 'o2', 'a2')
    const lc = s.store.lifecycle
    await lc.record({ orgId: 'o1', appId: null }, 'webhook.test', { webhookId: 'w' })
    const repo = s.store.chatops
    await connect(s, repo)
    expect(await repo.get('o1', 'c1')).toMatchObject({ id: 'c1', org_id: 'o1', cursor_seq: 1, last_error: null, deleted_at: null })
    expect(await repo.get('o2', 'c1')).toBeNull()
    expect((await repo.getAny('c1'))?.org_id).toBe('o1')
    expect((await repo.list('o1')).map((c) => c.id)).toEqual(['c1'])
    expect(await repo.behind()).toEqual([])
    await lc.record({ orgId: 'o1', appId: null }, 'webhook.test', { webhookId: 'w' })
    await lc.record({ orgId: 'o2', appId: null }, 'webhook.test', { webhookId: 'w' })
    // Behind: o1 has an event past c1's cursor; o2 has events but no connection.
    expect((await repo.behind()).map((c) => [c.id, c.cursor_seq])).toEqual([['c1', 1]])
    expect((await repo.behindInOrg('o1')).map((c) => c.id)).toEqual(['c1'])
    expect(await repo.behindInOrg('o2')).toEqual([])
    await repo.advance('c1', 2, null)
    expect(await repo.behind()).toEqual([])
    await lc.record({ orgId: 'o1', appId: null }, 'webhook.test', { webhookId: 'w' })
    expect((await repo.behind()).map((c) => c.id)).toEqual(['c1'])
    expect(await repo.softDelete('o2', 'c1', 5, [by('slack.disconnected', 'c1', 'o2')])).toBe(false)
    expect(await repo.softDelete('o1', 'c1', 5, [by('slack.disconnected', 'c1')])).toBe(true)
    expect(await repo.softDelete('o1', 'c1', 5, [by('slack.disconnected', 'c1')])).toBe(false)
    expect(await repo.getAny('c1')).toBeNull()
    expect(await repo.behind()).toEqual([])
    expect((await sql<{ action: string }>(s, 'SELECT action FROM audit_log')).map((a) => a.action).sort()).toEqual(['slack.connected', 'slack.disconnected'])
  })

  test('an insert that fails writes no audit row', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const repo = s.store.chatops
    await connect(s, repo)
    await expect(connect(s, repo)).rejects.toThrow()
    expect(await sql(s, 'SELECT id FROM audit_log')).toHaveLength(1)
  })

  test('cursor and errors: events after the cursor in order; the cursor never moves back', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const repo = s.store.chatops
    await connect(s, repo)
    const lc = s.store.lifecycle
    for (let i = 0; i < 3; i++) await lc.record({ orgId: 'o1', appId: 'a1' }, 'webhook.test', { webhookId: `w${i}` })
    const rows = await repo.eventsAfter('o1', 0, 2)
    expect(rows.map((e) => [e.seq, e.type, e.app_id])).toEqual([[1, 'webhook.test', 'a1'], [2, 'webhook.test', 'a1']])
    expect(JSON.parse(rows[0].data)).toEqual({ webhookId: 'w0' })
    expect(await repo.eventsAfter('o2', 0, 10)).toEqual([])
    await repo.advance('c1', 2, null)
    await repo.setError('c1', 'ratelimited')
    expect(await repo.getAny('c1')).toMatchObject({ cursor_seq: 2, last_error: 'ratelimited' })
    await repo.advance('c1', 3, 'channel_not_found')
    await repo.advance('c1', 1, null)
    expect(await repo.getAny('c1')).toMatchObject({ cursor_seq: 3, last_error: 'channel_not_found' })
  })

  test('drain claim: one owner at a time (compare-and-set), renewed by its owner, taken over once expired, released only by its owner (as of a given time); none on a disconnected connection', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const repo = s.store.chatops
    await connect(s, repo)
    expect(await repo.claimDrain('c1', 'nodeA', 100, 130)).toBe(true)
    expect(await repo.claimDrain('c1', 'nodeB', 110, 140)).toBe(false)
    expect(await repo.claimDrain('c1', 'nodeA', 120, 150)).toBe(true) // renewed
    expect(await repo.claimDrain('c1', 'nodeB', 149, 179)).toBe(false)
    expect(await repo.claimDrain('c1', 'nodeB', 150, 180)).toBe(true) // expired: taken over
    expect(await repo.claimDrain('c1', 'nodeA', 151, 181)).toBe(false)
    await repo.releaseDrain('c1', 'nodeA', 151) // not A's any more: nothing changes
    expect(await repo.claimDrain('c1', 'nodeA', 152, 182)).toBe(false)
    // Released after a write: the owner may take it again at once, another node only from `until` on
    // (the channel's pace carried across a handover).
    await repo.releaseDrain('c1', 'nodeB', 1152)
    expect(await sql(s, "SELECT drain_owner, drain_until FROM slack_connections WHERE id = 'c1'")).toEqual([{ drain_owner: 'nodeB', drain_until: 1152 }])
    expect(await repo.claimDrain('c1', 'nodeA', 153, 183)).toBe(false)
    expect(await repo.claimDrain('c1', 'nodeB', 153, 183)).toBe(true)
    await repo.releaseDrain('c1', 'nodeB', 1153)
    expect(await repo.claimDrain('c1', 'nodeA', 1152, 1182)).toBe(false)
    expect(await repo.claimDrain('c1', 'nodeA', 1153, 1183)).toBe(true)
    await repo.softDelete('o1', 'c1', 5, [by('slack.disconnected', 'c1')])
    expect(await repo.claimDrain('c1', 'nodeA', 154, 184)).toBe(false)
    expect(await repo.claimDrain('nope', 'nodeA', 154, 184)).toBe(false)
  })

  test('threads upsert by (connection, lead)', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const repo = s.store.chatops
    await connect(s, repo)
    expect(await repo.thread('c1', 'f1')).toBeNull()
    const t = { connection_id: 'c1', lead_feedback_id: 'f1', channel: 'C0TRIAGE', ts: '1.2', status: 'queued', duplicate_count: 0, updated_at: 1 }
    await repo.saveThread(t)
    await repo.saveThread({ ...t, status: 'pr_opened', duplicate_count: 2, updated_at: 2 })
    expect(await repo.thread('c1', 'f1')).toEqual({ ...t, status: 'pr_opened', duplicate_count: 2, updated_at: 2 })
  })

  test('allowed users: allow twice audits once, deny what is not allowed writes nothing; Org-scoped', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await seedOrgApp(s, 'o2', 'a2')
    const repo = s.store.chatops
    expect(await repo.allow('o1', 'T1', 'U1', 10, [by('slack.user_allowed', 'T1/U1')])).toBe(true)
    expect(await repo.allow('o1', 'T1', 'U1', 11, [by('slack.user_allowed', 'T1/U1')])).toBe(false)
    expect(await repo.allow('o1', 'T1', 'U0', 12, [])).toBe(true)
    expect(await repo.isAllowed('o1', 'T1', 'U1')).toBe(true)
    expect(await repo.isAllowed('o2', 'T1', 'U1')).toBe(false)
    expect(await repo.users('o1')).toEqual([
      { slack_team_id: 'T1', slack_user_id: 'U0', created_at: 12 },
      { slack_team_id: 'T1', slack_user_id: 'U1', created_at: 10 },
    ])
    expect(await repo.deny('o2', 'T1', 'U1', [by('slack.user_denied', 'T1/U1', 'o2')])).toBe(false)
    expect(await repo.deny('o1', 'T1', 'U1', [by('slack.user_denied', 'T1/U1')])).toBe(true)
    expect(await repo.isAllowed('o1', 'T1', 'U1')).toBe(false)
    expect((await sql<{ action: string }>(s, 'SELECT action FROM audit_log')).map((a) => a.action).sort()).toEqual(['slack.user_allowed', 'slack.user_denied'])
  })

  test('what the slash command reads: the report (Org-scoped), its duplicates, its latest PR; Apps and Orgs', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await seedOrgApp(s, 'o2', 'a2')
    await insertReport(s, 'f1', 'queued')
    await insertReport(s, 'f2')
    await insertReport(s, 'f3')
    await sql(s, "UPDATE feedback SET duplicate_of_id = 'f1' WHERE id IN ('f2', 'f3')")
    const run = (id: string, at: number, pr: string | null) =>
      sql(
        s,
        "INSERT INTO agent_runs (id, org_id, app_id, feedback_id, provider, status, branch, timings, pr_url, created_at) VALUES (?, 'o1', 'a1', 'f1', 'stub', 'succeeded', 'b', '{}', ?, ?)",
        [id, pr, at],
      )
    await run('r1', 1, 'https://git.example/pr/1')
    await run('r2', 2, 'https://git.example/pr/2')
    await run('r3', 3, null)
    const repo = s.store.chatops
    expect(await repo.report('o1', 'f2')).toEqual({ id: 'f2', app_id: 'a1', status: 'received', duplicate_of_id: 'f1' })
    expect(await repo.report('o2', 'f1')).toBeNull()
    expect(await repo.duplicateCount('f1')).toBe(2)
    expect(await repo.duplicateCount('f2')).toBe(0)
    expect(await repo.latestPrUrl('f1')).toBe('https://git.example/pr/2')
    expect(await repo.latestPrUrl('f2')).toBeNull()
    expect(await repo.appInOrg('o1', 'a1')).toBe(true)
    expect(await repo.appInOrg('o2', 'a1')).toBe(false)
    expect(await repo.orgExists('o2')).toBe(true)
    expect(await repo.orgExists('zz')).toBe(false)
  })
})

/** Cluster mode: the Slack drain claim expires on the database's clock, whatever a node's says (issue 35.4). */
describe('chatops repo [pg]: the drain claim on the database clock', () => {
  test('a node 3 minutes ahead cannot take the drain claim another node holds', async () => {
    const s = await freshStore('pg')
    const pool = openPool(s.location, 2)
    try {
      await seedOrgApp(s)
      await connect(s, s.store.chatops)
      const node = storeOf(pgStorage(pool), s.clock).chatops
      const dbNow = async () => Number((await sql<{ now: number }>(s, 'SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint AS now'))[0].now)
      let now = await dbNow()
      expect(await node.claimDrain('c1', 'nodeA', now, now + 30_000)).toBe(true)
      now = (await dbNow()) + 3 * 60_000
      expect(await node.claimDrain('c1', 'nodeFast', now, now + 30_000)).toBe(false)
      expect((await node.getAny('c1'))?.drain_owner).toBe('nodeA')
      // Expired on the database's clock: a node 3 minutes behind takes it, for 30 s of the database's clock.
      await sql(s, 'UPDATE slack_connections SET drain_until = ?', [(await dbNow()) - 1])
      now = (await dbNow()) - 3 * 60_000
      expect(await node.claimDrain('c1', 'nodeSlow', now, now + 30_000)).toBe(true)
      expect(Number((await node.getAny('c1'))?.drain_until)).toBeGreaterThan((await dbNow()) + 20_000)
    } finally {
      await pool.end()
    }
  })
})
