/**
 * The lifecycle (spec part 3): the pure FSM over every (from, to) pair, then the customer moves
 * through PATCH /v1/feedback/:id on a real server.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { CUSTOMER_TARGETS, FEEDBACK_STATUSES, TERMINAL_STATUSES, canCustomerMove, canFollowLead, canResolveByHand, canSystemMove, isFeedbackStatus, type FeedbackStatus } from '../src/core/fsm'
import { call, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { feedbackRowIn, forceStatusIn, markDuplicateIn, patchStatus, submit } from './helpers-lifecycle'

/** Written out from the spec (part 3) and DESIGN.md, not copied from the module under test. */
const CUSTOMER_EXPECTED: Record<'queued' | 'archived', FeedbackStatus[]> = {
  queued: ['sanitized', 'awaiting_manual', 'failed'],
  archived: ['received', 'sanitizing', 'sanitized', 'awaiting_manual', 'queued', 'agent_running', 'failed'],
}

const SYSTEM_EXPECTED: Record<FeedbackStatus, FeedbackStatus[]> = {
  received: ['sanitizing', 'failed'],
  sanitizing: ['sanitized', 'failed'],
  // Issue-tracker sync (docs/trackers.md): a lead whose tracker issue is closed is resolved from where it waits.
  sanitized: ['awaiting_manual', 'queued', 'failed', 'resolved'],
  // Closing the loop (CONTRACT.md): a PR closed unmerged goes back to a person; reopened, it is pr_opened again.
  awaiting_manual: ['pr_opened', 'resolved'],
  queued: ['agent_running', 'failed'],
  agent_running: ['pr_opened', 'failed', 'queued'],
  // Review iteration (docs/agents.md): a change request runs the agent again on the same branch.
  pr_opened: ['resolved', 'awaiting_manual', 'agent_running'],
  // A reopened tracker issue brings its resolved lead back to a person.
  resolved: ['awaiting_manual'],
  failed: ['resolved'],
  archived: [],
}

describe('pure FSM', () => {
  test('the status set holds every state the spec names', () => {
    for (const s of ['received', 'sanitizing', 'sanitized', 'awaiting_manual', 'queued', 'pr_opened', 'resolved', 'failed', 'archived']) {
      expect(isFeedbackStatus(s)).toBe(true)
    }
    expect(isFeedbackStatus('bogus')).toBe(false)
    expect(isFeedbackStatus(undefined)).toBe(false)
    expect([...CUSTOMER_TARGETS].sort()).toEqual(['archived', 'queued'])
    expect([...TERMINAL_STATUSES].sort()).toEqual(['archived', 'resolved'])
    // pr_opened: no customer move out of it (spec part 3); the system's only (resolved, or back to a person).
    for (const to of CUSTOMER_TARGETS) expect(canCustomerMove('pr_opened', to)).toBe(false)
  })

  for (const to of ['queued', 'archived'] as const) {
    for (const from of FEEDBACK_STATUSES) {
      const allowed = CUSTOMER_EXPECTED[to].includes(from)
      test(`customer ${from} → ${to}: ${allowed ? 'allowed' : 'refused'}`, () => {
        expect(canCustomerMove(from, to)).toBe(allowed)
      })
    }
  }

  test('system moves: every (from, to) pair', () => {
    const wrong: string[] = []
    for (const from of FEEDBACK_STATUSES) {
      for (const to of FEEDBACK_STATUSES) {
        const expected = SYSTEM_EXPECTED[from].includes(to)
        if (canSystemMove(from, to) !== expected) wrong.push(`${from} → ${to}: expected ${expected}`)
      }
    }
    expect(wrong).toEqual([])
  })

  test('a duplicate follows its lead to resolved, from where it waits (never from archived or mid-sanitizing), and back from resolved to awaiting_manual (a reopened tracker issue)', () => {
    const FOLLOWS: FeedbackStatus[] = ['sanitized', 'awaiting_manual', 'queued', 'failed', 'pr_opened']
    const wrong: string[] = []
    for (const from of FEEDBACK_STATUSES) {
      for (const to of FEEDBACK_STATUSES) {
        const expected = (to === 'resolved' && FOLLOWS.includes(from)) || (to === 'awaiting_manual' && from === 'resolved')
        if (canFollowLead(from, to) !== expected) wrong.push(`${from} → ${to}: expected ${expected}`)
      }
    }
    expect(wrong).toEqual([])
  })

  test('a person may mark a lead fixed from where it waits on people or a fix (never mid-sanitizing, mid-run, archived or resolved)', () => {
    const BY_HAND: FeedbackStatus[] = ['sanitized', 'awaiting_manual', 'queued', 'pr_opened', 'failed']
    expect(FEEDBACK_STATUSES.filter((from) => canResolveByHand(from))).toEqual(BY_HAND)
  })

  test('system invariants: no self-loops, nothing leaves archived, resolved only back to a person (a reopened tracker issue), only customers archive', () => {
    for (const s of FEEDBACK_STATUSES) {
      expect(canSystemMove(s, s)).toBe(false)
      expect(canSystemMove(s, 'archived')).toBe(false)
      expect(canSystemMove(s, 'received')).toBe(false)
    }
    for (const terminal of TERMINAL_STATUSES) {
      for (const to of FEEDBACK_STATUSES) expect(canSystemMove(terminal, to)).toBe(terminal === 'resolved' && to === 'awaiting_manual')
      for (const to of CUSTOMER_TARGETS) expect(canCustomerMove(terminal, to)).toBe(false)
    }
  })

  test('every state is reachable from received by system and customer moves', () => {
    const seen = new Set<FeedbackStatus>(['received'])
    const frontier: FeedbackStatus[] = ['received']
    while (frontier.length) {
      const from = frontier.pop()!
      const next = [...FEEDBACK_STATUSES.filter((to) => canSystemMove(from, to)), ...CUSTOMER_TARGETS.filter((to) => canCustomerMove(from, to))]
      for (const to of next) if (!seen.has(to)) (seen.add(to), frontier.push(to))
    }
    expect([...seen].sort()).toEqual([...FEEDBACK_STATUSES].sort())
  })
})

describe('PATCH /v1/feedback/:id', () => {
  let srv: TestServer
  let t: Tenant
  let other: Tenant

  beforeAll(async () => {
    // The worker stays off: the statuses set here must not move underneath the test.
    srv = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '100' }, { worker: { autoStart: false } })
    t = await seedTenant(srv.admin)
    other = await seedTenant(srv.admin, {}, 'Other')
  })
  afterAll(() => srv.close())

  async function newItem(status?: FeedbackStatus): Promise<string> {
    const r = await submit(srv.url, t.pub, { text: 'The save button does nothing' })
    expect(r.status).toBe(201)
    if (status && status !== 'received') await forceStatusIn(srv.ctx, r.body.id, status)
    return r.body.id
  }

  test('awaiting_manual → queued: 200 {id, status: queued}, stored with a new version', async () => {
    const id = await newItem('awaiting_manual')
    const before = (await feedbackRowIn(srv.ctx, id))
    const r = await patchStatus(srv.url, t.key, id, 'queued')
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ id, status: 'queued' })
    const after = (await feedbackRowIn(srv.ctx, id))
    expect(after.status).toBe('queued')
    expect(after.version).toBe(before.version + 1)
    const g = await call(srv.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })
    expect(g.body.status).toBe('queued')
  })

  test('archived twice: the second is 409 invalid_transition with {from: archived, to: archived}', async () => {
    const id = await newItem('awaiting_manual')
    const first = await patchStatus(srv.url, t.key, id, 'archived')
    expect(first.status).toBe(200)
    expect(first.body).toEqual({ id, status: 'archived' })
    const second = await patchStatus(srv.url, t.key, id, 'archived')
    expect(second.status).toBe(409)
    expect(second.body.error.code).toBe('invalid_transition')
    expect(second.body.error.details).toEqual({ from: 'archived', to: 'archived' })
    expect((await feedbackRowIn(srv.ctx, id)).status).toBe('archived')
  })

  // Every state × every customer target, over HTTP: the server enforces exactly the table above.
  for (const to of ['queued', 'archived'] as const) {
    for (const from of FEEDBACK_STATUSES) {
      const allowed = CUSTOMER_EXPECTED[to].includes(from)
      test(`HTTP ${from} → ${to}: ${allowed ? '200' : '409 invalid_transition'}`, async () => {
        const id = await newItem(from)
        const version = (await feedbackRowIn(srv.ctx, id)).version
        const r = await patchStatus(srv.url, t.key, id, to)
        const row = (await feedbackRowIn(srv.ctx, id))
        if (allowed) {
          expect(r.status).toBe(200)
          expect(r.body).toEqual({ id, status: to })
          expect(row.status).toBe(to)
          expect(row.version).toBe(version + 1)
        } else {
          expect(r.status).toBe(409)
          expect(r.body.error.code).toBe('invalid_transition')
          expect(r.body.error.details).toEqual({ from, to })
          expect(row.status).toBe(from)
          expect(row.version).toBe(version)
        }
      })
    }
  }

  test('a clustered duplicate cannot be patched: 409 invalid_target with details.leadFeedbackId', async () => {
    const lead = await newItem('awaiting_manual')
    const dup = await newItem('awaiting_manual')
    await markDuplicateIn(srv.ctx, dup, lead)
    for (const to of ['queued', 'archived']) {
      const r = await patchStatus(srv.url, t.key, dup, to)
      expect(r.status).toBe(409)
      expect(r.body.error.code).toBe('invalid_target')
      expect(r.body.error.details.leadFeedbackId).toBe(lead)
    }
    expect((await feedbackRowIn(srv.ctx, dup)).status).toBe('awaiting_manual')
    // The lead itself is patchable.
    expect((await patchStatus(srv.url, t.key, lead, 'queued')).status).toBe(200)
  })

  test('bad requests: empty patch, non-customer status, unknown field, bad id, unknown id, other Org', async () => {
    const id = await newItem('awaiting_manual')
    const cases: { name: string; path: string; body: unknown; auth: string; status: number; code: string }[] = [
      { name: 'empty patch', path: `/v1/feedback/${id}`, body: {}, auth: t.key, status: 400, code: 'no_op' },
      { name: 'system-only status', path: `/v1/feedback/${id}`, body: { status: 'pr_opened' }, auth: t.key, status: 400, code: 'invalid_body' },
      { name: 'unknown status', path: `/v1/feedback/${id}`, body: { status: 'done' }, auth: t.key, status: 400, code: 'invalid_body' },
      { name: 'unknown field', path: `/v1/feedback/${id}`, body: { status: 'queued', note: 'x' }, auth: t.key, status: 400, code: 'invalid_body' },
      { name: 'bad id', path: '/v1/feedback/not-an-id', body: { status: 'queued' }, auth: t.key, status: 400, code: 'invalid_id' },
      { name: 'unknown id', path: `/v1/feedback/${'0'.repeat(24)}`, body: { status: 'queued' }, auth: t.key, status: 404, code: 'not_found' },
      { name: 'other Org', path: `/v1/feedback/${id}`, body: { status: 'queued' }, auth: other.key, status: 404, code: 'not_found' },
    ]
    for (const c of cases) {
      const r = await call(srv.url, 'PATCH', c.path, { auth: c.auth, body: c.body })
      expect({ name: c.name, status: r.status, code: r.body?.error?.code }).toEqual({ name: c.name, status: c.status, code: c.code })
    }
    // None of them changed the row.
    expect((await feedbackRowIn(srv.ctx, id)).status).toBe('awaiting_manual')
  })
})
