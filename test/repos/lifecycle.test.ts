/** lifecycle/lifecycle.ts (the port) on both dialects: moves, events, jobs, seq order under concurrency. */
import { expect, test } from 'bun:test'
import { storeOf } from '../dialects'
import { describeEachDialect } from '../dialects'
import type { JobKind } from '../../src/lifecycle/jobs'
import { insertReport, seedOrgApp, sql } from './store-fixtures'
import { openPool } from '../../src/db/pg/client-options'
import { pgStorage } from '../../src/db/pg/storage'

describeEachDialect('lifecycle', (fresh) => {
  test('a customer move: row, version, event and no job; a forbidden one throws invalid_transition and changes nothing', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await insertReport(s, 'f1', 'awaiting_manual')
    const lc = s.store.lifecycle
    expect(await lc.move('f1', 'archived', { by: 'customer' })).toBe(true)
    const [row] = await sql<{ status: string; version: number }>(s, 'SELECT status, version FROM feedback WHERE id = ?', ['f1'])
    expect(row).toEqual({ status: 'archived', version: 1 })
    const events = await sql<{ type: string; data: string; seq: number }>(s, 'SELECT type, data, seq FROM events ORDER BY seq')
    expect(events.map((e) => [e.type, JSON.parse(e.data), e.seq])).toEqual([['feedback.status_changed', { feedbackId: 'f1', from: 'awaiting_manual', to: 'archived' }, 1]])
    await expect(lc.move('f1', 'pr_opened', { by: 'customer' })).rejects.toMatchObject({ code: 'invalid_transition' })
    expect((await sql(s, 'SELECT status, version FROM feedback WHERE id = ?', ['f1']))[0]).toEqual({ status: 'archived', version: 1 })
    expect(await sql(s, 'SELECT type FROM events')).toHaveLength(1)
    expect(await sql(s, 'SELECT id FROM jobs')).toHaveLength(0)
  })

  test('expectations that no longer hold: false, nothing written; a gone row: false', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await insertReport(s, 'f1', 'awaiting_manual')
    const lc = s.store.lifecycle
    expect(await lc.move('f1', 'archived', { by: 'customer', from: 'queued' })).toBe(false)
    expect(await lc.move('f1', 'archived', { by: 'customer', version: 7 })).toBe(false)
    expect(await lc.move('nope', 'archived', { by: 'customer' })).toBe(false)
    expect((await sql(s, 'SELECT version FROM feedback'))[0]).toEqual({ version: 0 })
    expect(await sql(s, 'SELECT id FROM events')).toHaveLength(0)
  })

  test('a move to queued queues the agent job and wakes the worker after the commit; failed keeps its reason', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await insertReport(s, 'f1', 'awaiting_manual')
    const wake = s.store.wake
    const woken: JobKind[] = []
    // What a worker woken by the signal would read: the job must be committed by then.
    let jobsWhenWoken: Promise<number> | undefined
    wake.on((k) => {
      woken.push(k)
      jobsWhenWoken = sql(s, 'SELECT id FROM jobs').then((r) => r.length)
    })
    const lc = s.store.lifecycle
    expect(await lc.move('f1', 'queued', { by: 'customer' })).toBe(true)
    expect(woken).toEqual(['agent'])
    expect(await jobsWhenWoken).toBe(1)
    const [job] = await sql<{ kind: string; feedback_id: string; run_after: number }>(s, 'SELECT kind, feedback_id, run_after FROM jobs')
    expect(job).toEqual({ kind: 'agent', feedback_id: 'f1', run_after: s.clock.now() })
    expect(await lc.move('f1', 'agent_running', { by: 'system' })).toBe(true)
    expect(await lc.move('f1', 'failed', { by: 'system', reason: 'x'.repeat(2000) })).toBe(true)
    const [row] = await sql<{ status: string; failure_reason: string }>(s, 'SELECT status, failure_reason FROM feedback')
    expect([row.status, row.failure_reason.length]).toEqual(['failed', 1000])
  })

  test('record, enqueue and waiting runs', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await insertReport(s, 'q1', 'queued')
    await insertReport(s, 'q2', 'queued')
    await insertReport(s, 'm1', 'awaiting_manual')
    const lc = s.store.lifecycle
    expect(await lc.record({ orgId: 'o1', appId: 'a1' }, 'webhook.test', { webhookId: 'w1' } as never)).toBe(1)
    expect(await lc.record({ orgId: 'o1', appId: null }, 'webhook.test', { webhookId: 'w1' } as never)).toBe(2)
    await lc.enqueue('batch_release', { appId: 'a1' }, 5_000)
    expect(await lc.enqueueWaitingRuns('a1')).toBe(2)
    // Reports that already have their agent job are not queued twice.
    expect(await lc.enqueueWaitingRuns('a1')).toBe(0)
    const jobs = await sql<{ kind: string; feedback_id: string | null; app_id: string | null }>(s, 'SELECT kind, feedback_id, app_id FROM jobs ORDER BY id')
    expect(jobs.map((j) => `${j.kind}:${j.feedback_id ?? j.app_id}`).sort()).toEqual(['agent:q1', 'agent:q2', 'batch_release:a1'])
  })

  test('moves racing for one report: exactly one wins, one event, one version step', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await insertReport(s, 'f1', 'awaiting_manual')
    const lc = s.store.lifecycle
    const results = await Promise.allSettled(Array.from({ length: 12 }, () => lc.move('f1', 'archived', { by: 'customer', from: 'awaiting_manual' })))
    expect(results.filter((r) => r.status === 'fulfilled' && r.value === true)).toHaveLength(1)
    expect(results.filter((r) => r.status === 'rejected')).toHaveLength(0)
    expect((await sql(s, 'SELECT version FROM feedback'))[0]).toEqual({ version: 1 })
    expect(await sql(s, 'SELECT id FROM events')).toHaveLength(1)
  })

  test('events of one Org appended from many connections at once: seqs 1..N, no gap, no repeat, in commit order', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await seedOrgApp(s, 'o2', 'a2')
    // On PostgreSQL a second pool plays a second node; SQLite has one writer.
    const other = s.storage.dialect === 'pg' ? pgStorage(openPool(s.location, 4)) : s.storage
    const lcs = [s.store.lifecycle, storeOf(other, s.clock).lifecycle]
    try {
      const seqs = await Promise.all(Array.from({ length: 60 }, (_, i) => lcs[i % 2].record({ orgId: i % 3 === 0 ? 'o2' : 'o1', appId: null }, 'webhook.test', { webhookId: `w${i}` } as never)))
      const byOrg = async (org: string) => (await sql<{ seq: number }>(s, 'SELECT seq FROM events WHERE org_id = ? ORDER BY seq', [org])).map((r) => r.seq)
      expect(await byOrg('o1')).toEqual(Array.from({ length: 40 }, (_, i) => i + 1))
      expect(await byOrg('o2')).toEqual(Array.from({ length: 20 }, (_, i) => i + 1))
      expect(new Set(seqs).size).toBe(40)
    } finally {
      if (other.dialect === 'pg' && other !== s.storage) await other.pool.end()
    }
  })
})
