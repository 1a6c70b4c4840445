/**
 * The feedback lifecycle: every status and every allowed move, for customers and for the system.
 * Pure: no I/O. The service applies a move with compare-and-set on the row's version.
 *
 *   received → sanitizing → sanitized → awaiting_manual | queued
 *   queued → agent_running → pr_opened | failed
 *   pr_opened → resolved (its pull/merge request merged, or its tracker issue closed)
 *             | awaiting_manual (closed without merge: back to a person);  awaiting_manual → pr_opened (reopened)
 *   pr_opened → agent_running (a review asked for changes: the agent iterates on the same branch, and
 *             agent_running → pr_opened again when the new commit is pushed)
 *   tracker (issue 26, docs/trackers.md): sanitized | awaiting_manual | failed | pr_opened → resolved when
 *             the lead's tracker issue is closed; resolved → awaiting_manual when it is reopened
 *   duplicates follow their lead: sanitized | awaiting_manual | queued | failed | pr_opened → resolved
 *             when the lead is resolved, and resolved → awaiting_manual when a reopened tracker issue
 *             brings the lead back (`canFollowLead`; never from archived: a dismissal stays)
 *   customer: sanitized | awaiting_manual | failed → queued;  any state but pr_opened/resolved/archived → archived
 *   by hand ("Mark as fixed", an addition: POST /v1/feedback/:id/resolve): sanitized | awaiting_manual | queued |
 *             failed | pr_opened → resolved (`canResolveByHand`), the lead's duplicates following it
 */
export const FEEDBACK_STATUSES = [
  'received',
  'sanitizing',
  'sanitized',
  'awaiting_manual',
  'queued',
  'agent_running',
  'pr_opened',
  'resolved',
  'failed',
  'archived',
] as const

export type FeedbackStatus = (typeof FEEDBACK_STATUSES)[number]

/**
 * Nothing leaves these by a person's hand: resolved (CONTRACT.md "Closing the loop": the fix was merged or
 * its tracker issue closed; only a reopened tracker issue takes it back to awaiting_manual) and archived
 * (dismissal). pr_opened, the spec's success state, stays closed to customers; only the
 * system moves it on, as its pull/merge request is merged or closed.
 */
export const TERMINAL_STATUSES: ReadonlySet<FeedbackStatus> = new Set(['resolved', 'archived'])

export const CUSTOMER_TARGETS = ['queued', 'archived'] as const
export type CustomerTarget = (typeof CUSTOMER_TARGETS)[number]

const CUSTOMER_MOVES: Record<CustomerTarget, ReadonlySet<FeedbackStatus>> = {
  queued: new Set(['sanitized', 'awaiting_manual', 'failed']),
  archived: new Set(['received', 'sanitizing', 'sanitized', 'awaiting_manual', 'queued', 'agent_running', 'failed']),
}

const SYSTEM_MOVES: Record<FeedbackStatus, ReadonlySet<FeedbackStatus>> = {
  received: new Set(['sanitizing', 'failed']),
  sanitizing: new Set(['sanitized', 'failed']),
  sanitized: new Set(['awaiting_manual', 'queued', 'failed', 'resolved']),
  awaiting_manual: new Set(['pr_opened', 'resolved']),
  queued: new Set(['agent_running', 'failed']),
  agent_running: new Set(['pr_opened', 'failed', 'queued']),
  pr_opened: new Set(['resolved', 'awaiting_manual', 'agent_running']),
  resolved: new Set(['awaiting_manual']),
  failed: new Set(['resolved']),
  archived: new Set([]),
}

export function isFeedbackStatus(value: unknown): value is FeedbackStatus {
  return typeof value === 'string' && (FEEDBACK_STATUSES as readonly string[]).includes(value)
}

/** May a customer (an `sk_` client) move an item from `from` to `to`? */
export function canCustomerMove(from: FeedbackStatus, to: CustomerTarget): boolean {
  return CUSTOMER_MOVES[to].has(from)
}

/** May the system (the worker) move an item from `from` to `to`? */
export function canSystemMove(from: FeedbackStatus, to: FeedbackStatus): boolean {
  return SYSTEM_MOVES[from].has(to)
}

/**
 * The statuses a duplicate may be in when its lead is resolved and it follows (`resolved`). A duplicate
 * never runs an agent of its own, so it sits wherever it stopped when it was attached; an archived
 * duplicate was dismissed on purpose and stays archived; one still being sanitized is left alone.
 */
const FOLLOWS_LEAD_FROM: ReadonlySet<FeedbackStatus> = new Set(['sanitized', 'awaiting_manual', 'queued', 'failed', 'pr_opened'])

/**
 * May a duplicate move from `from` to `to` because its lead moved there? To `resolved` (the lead was
 * resolved), and from `resolved` back to `awaiting_manual` (the lead's tracker issue was reopened).
 */
export function canFollowLead(from: FeedbackStatus, to: FeedbackStatus): boolean {
  if (to === 'awaiting_manual') return from === 'resolved'
  return to === 'resolved' && FOLLOWS_LEAD_FROM.has(from)
}

/** The statuses a lead leaves for `resolved` when its tracker issue is closed (issue 26). */
export const TRACKER_RESOLVES_FROM: ReadonlySet<FeedbackStatus> = new Set(['sanitized', 'awaiting_manual', 'failed', 'pr_opened'])

/**
 * The statuses a person may mark fixed ("Mark as fixed", POST /v1/feedback/:id/resolve): a lead whose fix
 * was made outside fixloop's agent (no repository, a branch merged by hand, a pull request merged where
 * fixloop does not hear of it). Not before it is sanitized (nobody has read it yet), not while a run is in
 * progress (the run makes its own move when it ends), and never from archived (a dismissal stays).
 */
const RESOLVES_BY_HAND_FROM: ReadonlySet<FeedbackStatus> = new Set(['sanitized', 'awaiting_manual', 'queued', 'failed', 'pr_opened'])

/** May a person mark a lead in `from` as fixed (move it to `resolved` by hand)? */
export function canResolveByHand(from: FeedbackStatus): boolean {
  return RESOLVES_BY_HAND_FROM.has(from)
}
