/**
 * The steps of a cluster change, planned once for both storage sides (src/dedup/steps.ts): the plans
 * themselves (pure: rows in, writes out), and what both services write from them, byte for byte where
 * the bytes leave the process (an event's payload is stored and delivered as JSON text).
 */
import { describe, expect, test } from 'bun:test'
import type { ClusterRow, RootState } from '../src/dedup/cluster-repo'
import { attachPlan, mergePlan, rejectPlan, stayLeadPlan, unmergePlan } from '../src/dedup/steps'
import { MERGED_BY_HAND } from '../src/dedup/suggestions'
import { describeEachDialect, processingOf, type FreshStore } from './dialects'
import { PROCESSING_KINDS } from '../src/worker/processing'
import { Worker } from '../src/worker/loop'
import { Logger } from '../src/core/logger'
import { seedOrgApp, sql } from './repos/store-fixtures'

function member(over: Partial<ClusterRow> = {}): ClusterRow {
  return {
    id: 'm1',
    org_id: 'o1',
    app_id: 'a1',
    status: 'awaiting_manual',
    version: 3,
    text: 'The checkout button does nothing.',
    url: 'https://shop.example/checkout',
    component_target: null,
    console_logs: null,
    duplicate_of_id: null,
    merge_locked: 0,
    redactions: '{}',
    created_at: 1000,
    rejected_lead_ids: null,
    suggested_lead_id: null,
    suggested_score: null,
    merge_score: null,
    ...over,
  } as ClusterRow
}

const open: RootState = { status: 'awaiting_manual', duplicate_of_id: null }
const lookup = (states: Record<string, RootState>) => (id: string) => states[id] ?? null
const scope = { orgId: 'o1', appId: 'a1' }

describe('plans (pure)', () => {
  test('attach: the member, then the duplicates it had, then the lead summary; one event per report that moved; the index links', () => {
    const plan = attachPlan('m1', 'L', false, { score: 0.9, reason: 'strong' }, member(), ['d1', 'd2'])
    expect(plan.writes).toEqual([
      { kind: 'duplicate', id: 'm1', leadId: 'L', locked: false, why: { score: 0.9, reason: 'strong' } },
      { kind: 'moveDuplicates', from: 'm1', to: 'L' },
      // Three joined: no single sanitized report to follow a lead state with.
      { kind: 'summary', leadId: 'L', change: { added: 3, joined: undefined } },
      ...['m1', 'd1', 'd2'].map((feedbackId) => ({ kind: 'attached' as const, scope, data: { feedbackId, leadFeedbackId: 'L', manual: false, automatic: true, score: 0.9 } })),
    ])
    expect(plan.after).toEqual({ appId: 'a1', links: [['m1', 'L'], ['d1', 'L'], ['d2', 'L']], forgetLesson: false })
    // One sanitized report joining alone: the summary may follow it; a raw one may not.
    expect(attachPlan('m1', 'L', false, MERGED_BY_HAND, member(), []).writes[1]).toMatchObject({ change: { added: 1, joined: { id: 'm1' } } })
    expect(attachPlan('m1', 'L', false, MERGED_BY_HAND, member({ redactions: null }), []).writes[1]).toEqual({ kind: 'summary', leadId: 'L', change: { added: 1, joined: undefined } })
  })

  test('attach of a report that is gone: the updates find nothing, nothing is recorded or indexed', () => {
    const plan = attachPlan('m1', 'L', true, MERGED_BY_HAND, null, [])
    expect(plan.writes.map((w) => w.kind)).toEqual(['duplicate', 'summary'])
    expect(plan.after).toBeNull()
  })

  test('merge confirming the suggestion (as served: its lead merged since into L): its score and reason, a confirmed decision, the former lead summarized', () => {
    const r = member({ duplicate_of_id: 'F', suggested_lead_id: 'S', suggested_score: 0.7 })
    const plan = mergePlan('m1', 'L', r, [], lookup({ S: { ...open, duplicate_of_id: 'L' }, L: open }))
    expect(plan.writes[0]).toEqual({ kind: 'duplicate', id: 'm1', leadId: 'L', locked: true, why: { score: 0.7, reason: 'confirmed suggestion' } })
    expect(plan.writes.slice(-2)).toEqual([
      { kind: 'summary', leadId: 'F' },
      { kind: 'decision', scope, decision: { feedbackId: 'm1', leadId: 'L', kind: 'confirmed', score: 0.7 } },
    ])
    expect(plan.after?.forgetLesson).toBe(true)
    // Into another lead: no confirmation, merged by hand, the lesson stands.
    const other = mergePlan('m1', 'X', r, [], lookup({ S: open, X: open }))
    expect(other.writes[0]).toMatchObject({ why: MERGED_BY_HAND })
    expect(other.writes.some((w) => w.kind === 'decision')).toBe(false)
    expect(other.after?.forgetLesson).toBe(false)
  })

  test('unmerge: a decision only for an automatic merge; both leads summarized before the event; requeue alone; nothing to do', () => {
    const auto = unmergePlan('m1', member({ duplicate_of_id: 'F', merge_score: 0.95 }), true)
    expect(auto.writes).toEqual([
      { kind: 'decision', scope, decision: { feedbackId: 'm1', leadId: 'F', kind: 'unmerged', score: 0.95 } },
      { kind: 'unmerge', id: 'm1' },
      { kind: 'summary', leadId: 'F' },
      { kind: 'summary', leadId: 'm1' },
      { kind: 'unmerged', scope, data: { feedbackId: 'm1', leadFeedbackId: 'F' } },
      { kind: 'enqueueProcess', id: 'm1' },
    ])
    expect(auto.after).toEqual({ appId: 'a1', links: [['m1', null]], forgetLesson: true })
    expect(unmergePlan('m1', member({ duplicate_of_id: 'F', merge_score: 0.95, merge_locked: 1 }), false).writes.map((w) => w.kind)).toEqual(['unmerge', 'summary', 'summary', 'unmerged'])
    expect(unmergePlan('m1', member(), true)).toEqual({ writes: [{ kind: 'enqueueProcess', id: 'm1' }], after: null })
    expect(unmergePlan('m1', null, false)).toEqual({ writes: [], after: null })
  })

  test('reject: the lead as served is remembered; no scored suggestion, no plan', () => {
    const r = member({ suggested_lead_id: 'S', suggested_score: 0.6 })
    expect(rejectPlan(r, lookup({ S: { ...open, duplicate_of_id: 'L' }, L: open }))?.writes).toEqual([
      { kind: 'rejectSuggestion', id: 'm1', leadId: 'L' },
      { kind: 'decision', scope, decision: { feedbackId: 'm1', leadId: 'L', kind: 'rejected', score: 0.6 } },
    ])
    // A suggested lead that no longer takes duplicates: the stored one is remembered.
    expect(rejectPlan(r, lookup({ S: { ...open, status: 'archived' } }))?.writes[0]).toEqual({ kind: 'rejectSuggestion', id: 'm1', leadId: 'S' })
    expect(rejectPlan(member(), lookup({}))).toBeNull()
    expect(rejectPlan(member({ suggested_lead_id: 'S' }), lookup({ S: open }))).toBeNull()
    expect(rejectPlan(null, lookup({}))).toBeNull()
  })

  test('a lead: its summary (may wait for a batch), and its suggestion only while it is no duplicate', () => {
    const s = { leadId: 'L', score: 0.6, reason: 'near' }
    expect(stayLeadPlan('m1', member(), s).writes).toEqual([
      { kind: 'summary', leadId: 'm1', change: { added: 0 } },
      { kind: 'suggestion', id: 'm1', suggestion: s },
      { kind: 'suggested', scope, data: { feedbackId: 'm1', leadFeedbackId: 'L', score: 0.6 } },
    ])
    expect(stayLeadPlan('m1', member({ duplicate_of_id: 'X' }), s).writes).toHaveLength(1)
    expect(stayLeadPlan('m1', null, s).writes).toHaveLength(1)
  })
})

const LEAD = 'The checkout button does nothing when I click it on the payment page.'
const SAME = 'The checkout button does nothing when I click it on the payment page!'

describeEachDialect('cluster changes as written', (fresh) => {
  let seq = 0
  async function submit(s: FreshStore, text: string): Promise<string> {
    const id = `t${String(++seq).padStart(4, '0')}`
    await sql(
      s,
      "INSERT INTO feedback (id, org_id, app_id, status, text, url, submitted_mode, created_at, updated_at) VALUES (?, 'o1', 'a1', 'received', ?, 'https://shop.example/checkout/payment', 'public', ?, ?)",
      [id, text, s.clock.now(), s.clock.now()],
    )
    await s.store.lifecycle.enqueue('process', { feedbackId: id, appId: 'a1' })
    s.clock.advance(10)
    return id
  }

  test('the events of an automatic attach, an unmerge and a merge by hand: payload keys in their usual order, counts after the change', async () => {
    const s = await fresh()
    await seedOrgApp(s)
    const processing = processingOf(s.store, s.clock)
    const worker = new Worker(s.store.jobs(PROCESSING_KINDS), processing.steps, s.clock, new Logger('silent'))
    const lead = await submit(s, LEAD)
    await worker.tick()
    const dup = await submit(s, SAME)
    await worker.tick()
    await processing.port.unmerge(dup)
    await processing.port.merge(dup, lead)
    const texts = (await sql<{ type: string; data: string }>(s, "SELECT type, data FROM events WHERE type IN ('feedback.duplicate_attached', 'feedback.unmerged') ORDER BY seq")).map(
      (e) => `${e.type} ${e.data}`,
    )
    const score = JSON.parse(texts[0].split(' ')[1]).score
    expect(typeof score).toBe('number')
    expect(texts).toEqual([
      `feedback.duplicate_attached {"feedbackId":"${dup}","leadFeedbackId":"${lead}","duplicateCount":1,"manual":false,"automatic":true,"score":${score}}`,
      `feedback.unmerged {"feedbackId":"${dup}","leadFeedbackId":"${lead}","duplicateCount":0}`,
      `feedback.duplicate_attached {"feedbackId":"${dup}","leadFeedbackId":"${lead}","duplicateCount":1,"manual":true,"automatic":false,"score":null}`,
    ])
    const leadRow = (await sql<{ duplicate_count: number; consolidated_text: string }>(s, 'SELECT duplicate_count, consolidated_text FROM feedback WHERE id = ?', [lead]))[0]
    expect(leadRow.duplicate_count).toBe(1)
    expect(leadRow.consolidated_text.startsWith(LEAD)).toBe(true)
  })
})
