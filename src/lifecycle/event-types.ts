/**
 * Every event type the outbox records, with the shape of its `data`. Payloads carry ids, states and URLs,
 * never report text (CONTRACT.md, Events). Consumers must accept types they do not know: the list grows.
 */
import type { FeedbackStatus } from '../core/fsm'

export interface EventPayloads {
  'feedback.received': { feedbackId: string; status: FeedbackStatus }
  'feedback.status_changed': { feedbackId: string; from: FeedbackStatus; to: FeedbackStatus; reason?: string | null }
  /** `score`: the merge's score (null for a merge by hand that confirmed no suggestion); `automatic` is `!manual`. */
  'feedback.duplicate_attached': { feedbackId: string; leadFeedbackId: string; duplicateCount: number; manual: boolean; automatic: boolean; score: number | null }
  /** Clustering offered a lead instead of merging (its reason stays on the item: it may quote the reports' words). */
  'feedback.duplicate_suggested': { feedbackId: string; leadFeedbackId: string; score: number }
  'feedback.unmerged': { feedbackId: string; leadFeedbackId: string; duplicateCount: number }
  /**
   * A report was resolved: its lead's pull/merge request was merged (one event for the lead and one for
   * each duplicate that followed it). `externalUserId`: the submitter's id from the user token, only for a
   * report submitted in private mode (null otherwise); never the report's text or email.
   */
  'feedback.resolved': { feedbackId: string; leadFeedbackId: string; prUrl: string | null; externalUserId: string | null }
  'agent_run.started': { runId: string; feedbackId: string; provider: string }
  'agent_run.phase': { runId: string; feedbackId: string; phase: 'prepare' | 'clone' | 'agent' | 'verify' | 'guardrails' | 'push' | 'pr'; durationMs: number }
  'agent_run.succeeded': { runId: string; feedbackId: string; prUrl: string | null; branch: string; costUsd: number }
  'agent_run.failed': { runId: string; feedbackId: string; error: string }
  'agent_run.guardrailed': { runId: string; feedbackId: string; guardrailReason: string }
  'webhook.disabled': { webhookId: string; reason: string }
  'webhook.test': { webhookId: string }
}

export type EventType = keyof EventPayloads

export const EVENT_TYPES = [
  'feedback.received',
  'feedback.status_changed',
  'feedback.duplicate_attached',
  'feedback.duplicate_suggested',
  'feedback.unmerged',
  'feedback.resolved',
  'agent_run.started',
  'agent_run.phase',
  'agent_run.succeeded',
  'agent_run.failed',
  'agent_run.guardrailed',
  'webhook.disabled',
  'webhook.test',
] as const satisfies readonly EventType[]

export function isEventType(value: unknown): value is EventType {
  return typeof value === 'string' && (EVENT_TYPES as readonly string[]).includes(value)
}

/**
 * The issue message for an events filter naming types that do not exist (`--events feedback.recieved`):
 * the types that do, so a typo is fixed from the answer rather than from docs/events.md.
 */
export function unknownEventTypesMessage(unknown: string[]): string {
  return `unknown event type(s): ${unknown.join(', ')}; the types are ${EVENT_TYPES.join(', ')}`
}

/** An event as a change records it (the outbox gives it its id, seq and time). */
export interface OutboxEvent<T extends EventType = EventType> {
  orgId: string
  appId: string | null
  type: T
  data: EventPayloads[T]
}

export interface StoredEvent {
  id: string
  orgId: string
  appId: string | null
  seq: number
  type: string
  data: Record<string, unknown>
  createdAt: number
}
