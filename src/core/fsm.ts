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
 *   duplicates follow their lead: sanitized | awaiting_manual | queued | failed | pr_opened → resolved
 *             when the lead is resolved (`canFollowLead`; never from archived: a dismissal stays)
 *   customer: sanitized | awaiting_manual | failed → queued;  any state but pr_opened/resolved/archived → archived
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
 * Nothing leaves these: resolved (CONTRACT.md "Closing the loop": the fix was merged; terminal success)
 * and archived (dismissal). pr_opened, the spec's success state, stays closed to customers; only the
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
  sanitized: new Set(['awaiting_manual', 'queued', 'failed']),
  awaiting_manual: new Set(['pr_opened']),
  queued: new Set(['agent_running', 'failed']),
  agent_running: new Set(['pr_opened', 'failed', 'queued']),
  pr_opened: new Set(['resolved', 'awaiting_manual', 'agent_running']),
  resolved: new Set([]),
  failed: new Set([]),
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

/** May a duplicate move from `from` to `to` because its lead moved there? Only to `resolved`. */
export function canFollowLead(from: FeedbackStatus, to: FeedbackStatus): boolean {
  return to === 'resolved' && FOLLOWS_LEAD_FROM.has(from)
}
