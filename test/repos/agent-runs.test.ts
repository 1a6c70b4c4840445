/**
 * modules/agent-runs/repo.ts on both dialects: the runner's transactions (start, a start that fails, the
 * end of a run, the reclaim of runs a dead process left) with their rows, moves and events; a start
 * racing a customer's archive; the caps' counts; the API's reads (order, limit, other Orgs' ids).
 */
import { expect, test } from 'bun:test'
import { storeOf } from '../dialects'
import { describeEachDialect, type FreshStore } from '../dialects'
import { RUN_LIST_LIMIT, type RunOutcome, type RunRowEnd, type RunRowInsert } from '../../src/modules/agent-runs/repo'
import { insertReport, seedOrgApp, sql } from './store-fixtures'
import { RUN_DUPLICATES_MEDIA_MAX } from '../../src/modules/agent-runs/repo'
import { openPool } from '../../src/db/pg/client-options'
import { pgStorage } from '../../src/db/pg/storage'
import type { Storage } from '../../src/db/storage'

const TIMINGS = JSON.stringify({ prepareMs: 0, cloneMs: 0, agentMs: 0, pushMs: 0, prMs: 0 })

function runRow(id: string, feedbackId: string, over: Partial<RunRowInsert> = {}): RunRowInsert {
  return { id, orgId: 'o1', appId: 'a1', feedbackId, provider: 'command', model: null, status: 'running', branch: `fixloop/${feedbackId}`, timings: TIMINGS, startedAt: 1_000, createdAt: 1_000, nodeId: null, ...over }
}

function endRow(id: string, over: Partial<RunRowEnd> = {}): RunRowEnd {
  return { id, status: 'failed', model: null, tokensIn: 0, tokensOut: 0, costUsd: 0, prUrl: null, guardrailReason: null, error: null, timings: TIMINGS, summary: null, outputTail: null, endedAt: 2_000, ...over }
}

const started = (runId: string, feedbackId: string) => ({ type: 'agent_run.started' as const, data: { runId, feedbackId, provider: 'command' } })
const failed = (runId: string, feedbackId: string, error: string, from: 'queued' | 'agent_running'): RunOutcome => ({
  move: { to: 'failed', cause: { by: 'system', from, reason: `run ${runId}: ${error}` } },
  event: { type: 'agent_run.failed', data: { runId, feedbackId, error } },
})

async function setup(s: FreshStore, storage: Storage = s.storage) {
  const lifecycle = storeOf(storage, s.clock).lifecycle
  return { lifecycle, repo: storeOf(storage).agentRuns }
}

const report = async (s: FreshStore, id: string) =>
  (await sql<{ status: string; version: number; failure_reason: string | null; merge_request_url: string | null }>(s, 'SELECT status, version, failure_reason, merge_request_url FROM feedback WHERE id = ?', [id]))[0]
const events = async (s: FreshStore) =>
  (await sql<{ type: string; data: string; seq: number }>(s, 'SELECT type, data, seq FROM events ORDER BY seq')).map((e) => [e.type, JSON.parse(e.data), e.seq])
const runs = (s: FreshStore) => sql<Record<string, unknown>>(s, 'SELECT * FROM agent_runs ORDER BY id')

describeEachDialect('agent-runs repo', (fresh) => {
  test('startRun: queued → agent_running, the run row and agent_run.started together; a second start finds nothing to do', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await insertReport(s, 'f1', 'queued')
    const { repo } = await setup(s)
    expect(await repo.startRun(runRow('r1', 'f1', { model: 'm' }), started('r1', 'f1'))).toBe(true)
    expect(await report(s, 'f1')).toEqual({ status: 'agent_running', version: 1, failure_reason: null, merge_request_url: null })
    const [row] = await runs(s)
    expect(row).toMatchObject({ id: 'r1', org_id: 'o1', app_id: 'a1', feedback_id: 'f1', provider: 'command', model: 'm', status: 'running', branch: 'fixloop/f1', tokens_in: 0, tokens_out: 0, cost_usd: 0, started_at: 1_000, created_at: 1_000, ended_at: null, sandbox_pid: null })
    expect(await events(s)).toEqual([
      ['feedback.status_changed', { feedbackId: 'f1', from: 'queued', to: 'agent_running' }, 1],
      ['agent_run.started', { runId: 'r1', feedbackId: 'f1', provider: 'command' }, 2],
    ])
    expect(await repo.startRun(runRow('r2', 'f1'), started('r2', 'f1'))).toBe(false)
    expect(await runs(s)).toHaveLength(1)
    expect(await events(s)).toHaveLength(2)
    expect(await repo.runningCount('a1')).toBe(1)
  })

  test('startReviewRun: pr_opened → agent_running, the run row with trigger review and its sanitized request; reviewRuns counts them; a report not in pr_opened finds nothing to do', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await insertReport(s, 'f1', 'pr_opened')
    await insertReport(s, 'f2', 'queued')
    const { repo } = await setup(s)
    expect(await repo.reviewRuns('f1')).toBe(0)
    expect(await repo.startReviewRun(runRow('r1', 'f2', { reviewText: 'x' }), started('r1', 'f2'))).toBe(false)
    expect(await repo.startReviewRun(runRow('r2', 'f1', { reviewText: 'handle [REDACTED:email]' }), started('r2', 'f1'))).toBe(true)
    expect((await report(s, 'f1')).status).toBe('agent_running')
    expect((await runs(s)).map((r) => [r.id, r.trigger, r.review_text])).toEqual([['r2', 'review', 'handle [REDACTED:email]']])
    expect(await repo.reviewRuns('f1')).toBe(1)
    expect((await events(s)).map((e) => e[0])).toEqual(['feedback.status_changed', 'agent_run.started'])
    // A report's own run is trigger report.
    expect(await repo.startRun(runRow('r3', 'f2', { appId: 'a1' }), started('r3', 'f2'))).toBe('app_busy')
    await repo.finishRun({ feedbackId: 'f1', orgId: 'o1', appId: 'a1' }, endRow('r2', { status: 'succeeded' }), { move: { to: 'pr_opened', cause: { by: 'system', from: 'agent_running', prUrl: 'https://git.example/pr/1' } }, event: { type: 'agent_run.succeeded', data: { runId: 'r2', feedbackId: 'f1', prUrl: 'https://git.example/pr/1', branch: 'fixloop/f1', costUsd: 0 } } })
    expect(await report(s, 'f1')).toMatchObject({ status: 'pr_opened', merge_request_url: 'https://git.example/pr/1' })
    expect(await repo.startRun(runRow('r3', 'f2'), started('r3', 'f2'))).toBe(true)
    expect((await runs(s)).map((r) => [r.id, r.trigger, r.review_text])).toEqual([['r2', 'review', 'handle [REDACTED:email]'], ['r3', 'report', null]])
    expect(await repo.reviewRuns('f1')).toBe(1)
    expect(await repo.reviewRuns('f2')).toBe(0)
  })

  test('one run in progress per App, whichever node starts it: a second start of another report of the App is app_busy, nothing written', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await insertReport(s, 'f1', 'queued')
    await insertReport(s, 'f2', 'queued')
    // Two nodes: each checked runningCount (0) before either started; on PostgreSQL two pools at once.
    const otherStorage = s.storage.dialect === 'pg' ? pgStorage(openPool(s.location, 2)) : s.storage
    const [{ repo: a }, { repo: b }] = [await setup(s), await setup(s, otherStorage)]
    const outcomes = await Promise.all([a.startRun(runRow('r1', 'f1'), started('r1', 'f1')), b.startRun(runRow('r2', 'f2', { nodeId: 'node_b' }), started('r2', 'f2'))])
    if (otherStorage !== s.storage && otherStorage.dialect === 'pg') await otherStorage.pool.end()
    expect(outcomes.map(String).sort()).toEqual(['app_busy', 'true'])
    expect(await a.runningCount('a1')).toBe(1)
    // The loser's start left nothing: its report still queued, one run row, one start's events.
    const loser = outcomes[0] === 'app_busy' ? 'f1' : 'f2'
    const statuses = { f1: (await report(s, 'f1')).status, f2: (await report(s, 'f2')).status }
    expect(statuses[loser]).toBe('queued')
    expect(await runs(s)).toHaveLength(1)
    expect((await events(s)).map((e) => e[0])).toEqual(['feedback.status_changed', 'agent_run.started'])
    // Once the run ended, the App's next start goes through.
    const [winner] = await runs(s)
    await a.finishRun({ feedbackId: String(winner.feedback_id), orgId: 'o1', appId: 'a1' }, endRow(String(winner.id), { status: 'succeeded' }), { move: { to: 'failed', cause: { by: 'system', from: 'agent_running', reason: 'test' } }, event: { type: 'agent_run.failed', data: { runId: String(winner.id), feedbackId: String(winner.feedback_id), error: 'test' } } })
    expect(await a.startRun(runRow('r3', loser), started('r3', loser))).toBe(true)
  })

  test('recordPhase: the running run\'s timings so far and agent_run.phase together; nothing once the run ended', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await insertReport(s, 'f1', 'queued')
    const { repo } = await setup(s)
    expect(await repo.startRun(runRow('r1', 'f1'), started('r1', 'f1'))).toBe(true)
    const scope = { feedbackId: 'f1', orgId: 'o1', appId: 'a1' }
    const phase = (name: 'prepare' | 'clone', ms: number) => ({ type: 'agent_run.phase' as const, data: { runId: 'r1', feedbackId: 'f1', phase: name, durationMs: ms } })
    const soFar = JSON.stringify({ prepareMs: 12, cloneMs: 0, agentMs: 0, pushMs: 0, prMs: 0 })
    expect(await repo.recordPhase(scope, 'r1', soFar, phase('prepare', 12))).toBe(true)
    expect(JSON.parse(String((await runs(s))[0].timings))).toEqual({ prepareMs: 12, cloneMs: 0, agentMs: 0, pushMs: 0, prMs: 0 })
    expect((await events(s)).slice(-1)).toEqual([['agent_run.phase', { runId: 'r1', feedbackId: 'f1', phase: 'prepare', durationMs: 12 }, 3]])
    // The report is untouched: a phase is no move.
    expect(await report(s, 'f1')).toMatchObject({ status: 'agent_running', version: 1 })
    await repo.finishRun(scope, endRow('r1', { error: 'agent exited with code 1' }), failed('r1', 'f1', 'agent exited with code 1', 'agent_running'))
    const ended = await runs(s)
    expect(await repo.recordPhase(scope, 'r1', TIMINGS, phase('clone', 5))).toBe(false)
    expect(await runs(s)).toEqual(ended)
    expect((await events(s)).filter((e) => e[0] === 'agent_run.phase')).toHaveLength(1)
  })

  test('startRun on a report no longer queued, or gone: false, nothing written', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await insertReport(s, 'f1', 'archived')
    const { repo } = await setup(s)
    expect(await repo.startRun(runRow('r1', 'f1'), started('r1', 'f1'))).toBe(false)
    expect(await repo.startRun(runRow('r2', 'nope'), started('r2', 'nope'))).toBe(false)
    expect(await runs(s)).toHaveLength(0)
    expect(await events(s)).toHaveLength(0)
    expect((await report(s, 'f1')).version).toBe(0)
  })

  test('a start that fails midway rolls back whole: the report stays queued, no event, no run row', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await insertReport(s, 'f0', 'queued')
    await insertReport(s, 'f1', 'queued')
    const { repo } = await setup(s)
    // Not `running`, so the App's one-run-in-progress index is not what fails below.
    expect(await repo.startRun(runRow('r1', 'f0', { status: 'failed' }), started('r1', 'f0'))).toBe(true)
    // The run id is taken: the INSERT fails after the move.
    await expect(repo.startRun(runRow('r1', 'f1'), started('r1', 'f1'))).rejects.toThrow()
    expect(await report(s, 'f1')).toMatchObject({ status: 'queued', version: 0 })
    expect(await events(s)).toHaveLength(2)
    expect((await runs(s)).map((r) => r.feedback_id)).toEqual(['f0'])
  })

  test('a start racing a customer archive (another connection): exactly one wins, and the rows say which', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    // On PostgreSQL the archive comes through a second pool (another node); SQLite has one writer.
    const other = s.storage.dialect === 'pg' ? pgStorage(openPool(s.location, 4)) : s.storage
    try {
      const { repo } = await setup(s)
      const customer = storeOf(other, s.clock).lifecycle
      const ids = Array.from({ length: 8 }, (_, i) => `f${i}`)
      // One App per report: an App has one run in progress at a time.
      for (const [i, id] of ids.entries()) {
        await seedOrgApp(s, 'o1', `app${i}`)
        await insertReport(s, id, 'queued', 'o1', `app${i}`)
      }
      const outcomes = await Promise.all(
        ids.map(async (id, i) => {
          const start = () => repo.startRun(runRow(`r${i}`, id, { appId: `app${i}` }), started(`r${i}`, id))
          // The customer's PATCH carries the version it read (If-Match): a start in between makes it lose.
          const archive = () => customer.move(id, 'archived', { by: 'customer', version: 0 })
          const [a, b] = i % 2 === 0 ? await Promise.all([start(), archive()]) : (await Promise.all([archive(), start()])).reverse()
          return { id, started: a, archived: b }
        }),
      )
      for (const o of outcomes) {
        expect(o.started !== o.archived).toBe(true)
        const row = await report(s, o.id)
        expect(row).toMatchObject({ status: o.started ? 'agent_running' : 'archived', version: 1 })
        expect(await sql(s, 'SELECT id FROM agent_runs WHERE feedback_id = ?', [o.id])).toHaveLength(o.started ? 1 : 0)
        expect(await sql(s, 'SELECT id FROM events WHERE feedback_id = ?', [o.id])).toHaveLength(o.started ? 2 : 1)
      }
    } finally {
      if (other.dialect === 'pg' && other !== s.storage) await other.pool.end()
    }
  })

  test('finishRun succeeded: the run row, pr_opened with its URL, the duplicates pointed at it, agent_run.succeeded', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await insertReport(s, 'f1', 'queued')
    await insertReport(s, 'd1', 'sanitized')
    await insertReport(s, 'd2', 'sanitized')
    await sql(s, "UPDATE feedback SET duplicate_of_id = 'f1' WHERE id IN ('d1', 'd2')")
    const { repo } = await setup(s)
    await repo.startRun(runRow('r1', 'f1'), started('r1', 'f1'))
    const url = 'https://git.example/pr/1'
    await repo.finishRun(
      { feedbackId: 'f1', orgId: 'o1', appId: 'a1' },
      endRow('r1', { status: 'succeeded', model: 'm2', tokensIn: 1200, tokensOut: 340, costUsd: 0.125, prUrl: url, summary: 'fixed', outputTail: 'ok', endedAt: 5_000 }),
      {
        move: { to: 'pr_opened', cause: { by: 'system', from: 'agent_running', prUrl: url } },
        shareUrl: url,
        event: { type: 'agent_run.succeeded', data: { runId: 'r1', feedbackId: 'f1', prUrl: url, branch: 'fixloop/f1', costUsd: 0.125 } },
      },
    )
    const [row] = await runs(s)
    expect(row).toMatchObject({ status: 'succeeded', model: 'm2', tokens_in: 1200, tokens_out: 340, cost_usd: 0.125, pr_url: url, summary: 'fixed', output_tail: 'ok', ended_at: 5_000, error: null })
    expect(await report(s, 'f1')).toMatchObject({ status: 'pr_opened', version: 2, merge_request_url: url })
    for (const d of ['d1', 'd2']) expect(await report(s, d)).toMatchObject({ status: 'sanitized', version: 1, merge_request_url: url })
    expect((await events(s)).slice(2)).toEqual([
      ['feedback.status_changed', { feedbackId: 'f1', from: 'agent_running', to: 'pr_opened' }, 3],
      ['agent_run.succeeded', { runId: 'r1', feedbackId: 'f1', prUrl: url, branch: 'fixloop/f1', costUsd: 0.125 }, 4],
    ])
    expect(await repo.runningCount('a1')).toBe(0)
  })

  test('finishRun guardrailed and failed: the report fails with its reason, the matching event', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await insertReport(s, 'f1', 'queued')
    await insertReport(s, 'f2', 'queued')
    const { repo } = await setup(s)
    await repo.startRun(runRow('r1', 'f1'), started('r1', 'f1'))
    await repo.finishRun({ feedbackId: 'f1', orgId: 'o1', appId: 'a1' }, endRow('r1', { status: 'guardrailed', guardrailReason: 'too many files' }), {
      move: { to: 'failed', cause: { by: 'system', from: 'agent_running', reason: 'agent run r1 guardrailed: too many files' } },
      event: { type: 'agent_run.guardrailed', data: { runId: 'r1', feedbackId: 'f1', guardrailReason: 'too many files' } },
    })
    await repo.startRun(runRow('r2', 'f2'), started('r2', 'f2'))
    await repo.finishRun({ feedbackId: 'f2', orgId: 'o1', appId: 'a1' }, endRow('r2', { error: 'boom' }), failed('r2', 'f2', 'boom', 'agent_running'))
    expect(await report(s, 'f1')).toMatchObject({ status: 'failed', failure_reason: 'agent run r1 guardrailed: too many files' })
    expect(await report(s, 'f2')).toMatchObject({ status: 'failed', failure_reason: 'run r2: boom' })
    expect((await runs(s)).map((r) => [r.id, r.status, r.guardrail_reason, r.error])).toEqual([
      ['r1', 'guardrailed', 'too many files', null],
      ['r2', 'failed', null, 'boom'],
    ])
    expect((await events(s)).filter((e) => (e[0] as string).startsWith('agent_run.') && e[0] !== 'agent_run.started').map((e) => e[0])).toEqual(['agent_run.guardrailed', 'agent_run.failed'])
  })

  test('recordFailedStart: an ended failed run, the queued report failed, agent_run.failed, together', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await insertReport(s, 'f1', 'queued')
    const { repo } = await setup(s)
    const error = 'cap reached: 5 runs in the last 24 hours (limit 5 per day)'
    await repo.recordFailedStart(runRow('r1', 'f1', { status: 'failed' }), endRow('r1', { error, endedAt: 1_000 }), failed('r1', 'f1', error, 'queued'))
    const [row] = await runs(s)
    expect(row).toMatchObject({ id: 'r1', status: 'failed', error, started_at: 1_000, ended_at: 1_000 })
    expect(await report(s, 'f1')).toMatchObject({ status: 'failed', version: 1, failure_reason: `run r1: ${error}` })
    expect(await events(s)).toEqual([
      ['feedback.status_changed', { feedbackId: 'f1', from: 'queued', to: 'failed' }, 1],
      ['agent_run.failed', { runId: 'r1', feedbackId: 'f1', error }, 2],
    ])
  })

  test('caps: running runs, runs since, cost since (inclusive bound, per App)', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await seedOrgApp(s, 'o1', 'a2')
    const { repo } = await setup(s)
    expect([await repo.runningCount('a1'), await repo.runsSince('a1', 0), await repo.costSince('a1', 0)]).toEqual([0, 0, 0])
    const put = async (id: string, app: string, status: string, createdAt: number, cost: number) =>
      sql(s, 'INSERT INTO agent_runs (id, org_id, app_id, feedback_id, provider, status, branch, timings, cost_usd, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)', [id, 'o1', app, 'fx', 'command', status, 'b', TIMINGS, cost, createdAt])
    await put('r1', 'a1', 'succeeded', 100, 0.25)
    await put('r2', 'a1', 'failed', 200, 0.5)
    await put('r3', 'a1', 'running', 300, 0)
    await put('r4', 'a2', 'running', 300, 9)
    expect(await repo.runningCount('a1')).toBe(1)
    expect(await repo.runsSince('a1', 200)).toBe(2)
    expect(await repo.runsSince('a1', 301)).toBe(0)
    expect(await repo.costSince('a1', 100)).toBe(0.75)
    expect(await repo.costSince('a1', 200)).toBe(0.5)
    expect(typeof (await repo.costSince('a1', 999))).toBe('number')
  })

  test('feedback: the columns a run reads, typed; null for an unknown id', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await insertReport(s, 'f1', 'queued')
    const { repo } = await setup(s)
    const f = await repo.feedback('f1')
    expect(f).toEqual({
      id: 'f1', org_id: 'o1', app_id: 'a1', status: 'queued', version: 0, text: 'raw text', url: null, theme: null, consolidated_text: null,
      duplicate_count: 0, duplicate_of_id: null, console_logs: null, component_target: null, attachments: null, redactions: null,
    })
    expect(await repo.feedback('nope')).toBeNull()
  })

  test('duplicatesMedia: the lead’s duplicates with attachments or a component, newest first, not spam, bounded', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await insertReport(s, 'lead', 'queued')
    const { repo } = await setup(s)
    expect(await repo.duplicatesMedia('lead')).toEqual([])
    for (let i = 0; i < RUN_DUPLICATES_MEDIA_MAX + 3; i++) {
      const id = `d${String(i).padStart(3, '0')}`
      await insertReport(s, id, 'sanitized')
      await sql(s, 'UPDATE feedback SET duplicate_of_id = ?, attachments = ?, redactions = ? WHERE id = ?', ['lead', `[{"key":"${id}"}]`, '{}', id])
    }
    await insertReport(s, 'd900', 'sanitized')
    await sql(s, "UPDATE feedback SET duplicate_of_id = 'lead', component_target = '{\"name\":\"Cart\"}' WHERE id = 'd900'")
    await insertReport(s, 'd950', 'sanitized')
    await sql(s, "UPDATE feedback SET duplicate_of_id = 'lead' WHERE id = 'd950'") // nothing to show
    await insertReport(s, 'd990', 'sanitized')
    await sql(s, "UPDATE feedback SET duplicate_of_id = 'lead', attachments = '[]', spam_marked_at = 5 WHERE id = 'd990'")
    await insertReport(s, 'other', 'sanitized')
    await sql(s, "UPDATE feedback SET attachments = '[]' WHERE id = 'other'")
    const got = await repo.duplicatesMedia('lead')
    expect(got).toHaveLength(RUN_DUPLICATES_MEDIA_MAX)
    expect(got[0]).toEqual({ id: 'd900', attachments: null, component_target: '{"name":"Cart"}', redactions: null })
    expect(got[1]).toEqual({ id: `d${String(RUN_DUPLICATES_MEDIA_MAX + 2).padStart(3, '0')}`, attachments: `[{"key":"d${String(RUN_DUPLICATES_MEDIA_MAX + 2).padStart(3, '0')}"}]`, component_target: null, redactions: '{}' })
    expect(got.map((r) => r.id)).toEqual([...got.map((r) => r.id)].sort().reverse())
  })

  test('reclaim at start: interrupted runs listed with their sandbox; failing one fails its report once, with its event', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await seedOrgApp(s, 'o1', 'a2')
    await insertReport(s, 'f1', 'queued')
    await insertReport(s, 'f2', 'queued', 'o1', 'a2')
    const { repo } = await setup(s)
    await repo.startRun(runRow('r1', 'f1'), started('r1', 'f1'))
    await repo.startRun(runRow('r2', 'f2', { appId: 'a2' }), started('r2', 'f2'))
    await repo.setSandbox('r1', 4242, 'boot:123')
    await repo.setSandbox('r2', 77, 'boot:9')
    await repo.setSandbox('r2', null, null)
    expect(await repo.interrupted()).toEqual([
      { id: 'r1', org_id: 'o1', app_id: 'a1', feedback_id: 'f1', sandbox_pid: 4242, sandbox_start: 'boot:123', trigger: 'report' },
      { id: 'r2', org_id: 'o1', app_id: 'a2', feedback_id: 'f2', sandbox_pid: null, sandbox_start: null, trigger: 'report' },
    ])
    const [r1] = await repo.interrupted()
    const reason = 'interrupted'
    // Two reclaims of one run at once (two starts): one fails it, the other finds it no longer running.
    const results = await Promise.all([1, 2].map(() => repo.failInterrupted(r1, reason, 9_000, failed('r1', 'f1', reason, 'agent_running'))))
    expect(results.sort()).toEqual([false, true])
    expect((await runs(s))[0]).toMatchObject({ status: 'failed', error: reason, ended_at: 9_000 })
    expect(await report(s, 'f1')).toMatchObject({ status: 'failed', version: 2, failure_reason: 'run r1: interrupted' })
    expect((await sql(s, "SELECT type FROM events WHERE feedback_id = 'f1' ORDER BY seq")).map((e) => e.type)).toEqual([
      'feedback.status_changed', 'agent_run.started', 'feedback.status_changed', 'agent_run.failed',
    ])
    expect((await repo.interrupted()).map((r) => r.id)).toEqual(['r2'])
  })

  test('interrupted runs by node: the given nodes\' runs; with null, runs of no live node (none claims them, or their node is gone from cluster_nodes)', async () => {
    const s = await fresh()
    const { repo } = await setup(s)
    const apps = ['a1', 'a2', 'a3', 'a4']
    for (const [i, app] of apps.entries()) {
      if (i === 0) await seedOrgApp(s)
      else await seedOrgApp(s, 'o1', app)
      await insertReport(s, `f${i}`, 'queued', 'o1', app)
    }
    await sql(s, "INSERT INTO cluster_nodes (id, host, pid, version, started_at, heartbeat_at, roles) VALUES ('node_live', 'h', 1, 'v', 1, 1, '')")
    const nodes = [null, 'node_live', 'node_gone', 'node_dead']
    for (const [i, node] of nodes.entries()) await repo.startRun(runRow(`r${i}`, `f${i}`, { appId: apps[i], nodeId: node }), started(`r${i}`, `f${i}`))
    await sql(s, "INSERT INTO cluster_nodes (id, host, pid, version, started_at, heartbeat_at, roles) VALUES ('node_dead', 'h', 2, 'v', 1, 1, '')")
    expect((await repo.interrupted(null)).map((r) => r.id)).toEqual(['r0', 'r2'])
    expect((await repo.interrupted(['node_dead'])).map((r) => r.id)).toEqual(['r3'])
    expect((await repo.interrupted()).map((r) => r.id)).toEqual(['r0', 'r1', 'r2', 'r3'])
  })

  test('reclaim of an interrupted review iteration: its report goes back to pr_opened, the URL kept', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await insertReport(s, 'f1', 'pr_opened')
    await sql(s, "UPDATE feedback SET merge_request_url = 'https://git.example/pr/9' WHERE id = 'f1'")
    const { repo } = await setup(s)
    await repo.startReviewRun(runRow('r1', 'f1', { reviewText: 'x' }), started('r1', 'f1'))
    const [r1] = await repo.interrupted()
    expect(r1.trigger).toBe('review')
    expect(await repo.failInterrupted(r1, 'interrupted', 9_000, { move: { to: 'pr_opened', cause: { by: 'system', from: 'agent_running' } }, event: { type: 'agent_run.failed', data: { runId: 'r1', feedbackId: 'f1', error: 'interrupted' } } })).toBe(true)
    expect(await report(s, 'f1')).toMatchObject({ status: 'pr_opened', merge_request_url: 'https://git.example/pr/9' })
  })

  test('API reads: by id, latest, the list newest first and capped; other Orgs find nothing', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await seedOrgApp(s, 'o2', 'b1')
    await insertReport(s, 'f1', 'failed')
    await insertReport(s, 'g1', 'failed', 'o2', 'b1')
    const { repo } = await setup(s)
    const n = RUN_LIST_LIMIT + 5
    // Ids sort by creation (core/ids.ts): r000 … r204, the newest last.
    const ids = Array.from({ length: n }, (_, i) => `r${String(i).padStart(3, '0')}`)
    for (const id of ids) await repo.recordFailedStart(runRow(id, 'f1', { status: 'failed' }), endRow(id, { error: 'x' }), failed(id, 'f1', 'x', 'queued'))
    await repo.recordFailedStart(runRow('z1', 'g1', { orgId: 'o2', appId: 'b1', status: 'failed' }), endRow('z1'), failed('z1', 'g1', 'x', 'queued'))

    const one = await repo.byId('o1', 'r007')
    expect(one).toMatchObject({ id: 'r007', org_id: 'o1', feedback_id: 'f1', status: 'failed', tokens_in: 0, cost_usd: 0, started_at: 1_000, ended_at: 2_000, created_at: 1_000, timings: TIMINGS })
    expect(typeof one!.cost_usd).toBe('number')
    expect((await repo.latestFor('o1', 'f1'))!.id).toBe(ids[n - 1])
    const list = await repo.allFor('o1', 'f1')
    expect(list.map((r) => r.id)).toEqual(ids.slice().reverse().slice(0, RUN_LIST_LIMIT))
    expect(await repo.feedbackInOrg('o1', 'f1')).toBe(true)

    // Another Org's ids: nothing, both ways.
    expect(await repo.byId('o2', 'r007')).toBeNull()
    expect(await repo.byId('o1', 'z1')).toBeNull()
    expect(await repo.latestFor('o2', 'f1')).toBeNull()
    expect(await repo.allFor('o2', 'f1')).toEqual([])
    expect(await repo.feedbackInOrg('o2', 'f1')).toBe(false)
    expect(await repo.feedbackInOrg('o1', 'g1')).toBe(false)
    expect((await repo.allFor('o2', 'g1')).map((r) => r.id)).toEqual(['z1'])
    expect(await repo.byId('o1', 'nope')).toBeNull()
    expect(await repo.allFor('o1', 'nope')).toEqual([])
  })

  test('latest and the list go by when a run was made, not by its id: two nodes\' ids of one second sort by their random bytes', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    await insertReport(s, 'f1', 'failed')
    const { repo } = await setup(s)
    // Node B's run was made 400 ms after node A's, in the same second; B's random bytes sort first.
    const a = '66a00000ffffffffff000001'
    const b = '66a000000000000000000001'
    await repo.recordFailedStart(runRow(a, 'f1', { status: 'failed', createdAt: 1_000, startedAt: 1_000, nodeId: 'node_a' }), endRow(a, { error: 'a' }), failed(a, 'f1', 'a', 'queued'))
    await repo.recordFailedStart(runRow(b, 'f1', { status: 'failed', createdAt: 1_400, startedAt: 1_400, nodeId: 'node_b' }), endRow(b, { error: 'b' }), failed(b, 'f1', 'b', 'queued'))
    expect((await repo.latestFor('o1', 'f1'))!.error).toBe('b')
    expect((await repo.allFor('o1', 'f1')).map((r) => r.error)).toEqual(['b', 'a'])
  })
})
