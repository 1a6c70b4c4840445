/**
 * The public types. Request shapes come straight from the generated src/openapi.ts (closed: the server
 * rejects unknown values). Response shapes are widened so that every string union (status, mode, kind,
 * error code, event type) also accepts values a newer server adds: `status: 'queued' | … | (string & {})`
 * keeps autocompletion and still compiles when fixloop ships a new status.
 */
import type * as Api from './openapi.js'

/** Widens string-literal unions to stay open for additive values; leaves everything else as is. */
export type Open<T> = T extends string
  ? string extends T
    ? T
    : T | (string & {})
  : T extends (infer U)[]
    ? Open<U>[]
    : T extends object
      ? { [K in keyof T]: Open<T[K]> }
      : T

export type App = Open<Api.AppList['data'][number]>
export type FeedbackItem = Open<Api.FeedbackItem>
export type FeedbackListItem = Open<Api.FeedbackPage['data'][number]>
export type FeedbackPage = Open<Api.FeedbackPage>
export type FeedbackStatus = FeedbackItem['status']
export type SimilarReport = Open<Api.SimilarList['data'][number]>
export type AgentRun = Open<Api.AgentRun>
export type UploadUrl = Open<Api.UploadUrl>
export type FeedbackSubmitResult = Open<Api.FeedbackSubmitResult>
export type FeedbackUpdateResult = Open<Api.FeedbackUpdateResult>
export type MintResult = Api.MintResult

export type FeedbackListParams = Api.FeedbackListParams
export type FeedbackSubmitParams = Api.FeedbackSubmitParams
export type FeedbackUpdateParams = Api.FeedbackUpdateParams
export type UploadUrlParams = Api.UploadUrlParams
export type SimilarParams = Api.SimilarParams
export type MintParams = Api.MintParams & { appId: string }

/** Event types named by the contract; the union stays open (new types ship additively). */
export type EventType =
  | 'feedback.received'
  | 'feedback.status_changed'
  | 'feedback.duplicate_attached'
  | 'agent_run.started'
  | 'agent_run.succeeded'
  | 'agent_run.failed'
  | 'agent_run.guardrailed'
  | (string & {})

/** One entry of the event outbox: ids and states, never report text. */
export interface FixloopEvent {
  id: string
  /** Rises by one per Org: the pull feed's and the stream's cursor. */
  seq: number
  type: EventType
  createdAt: string
  appId: string | null
  data: Record<string, unknown> & { feedbackId?: string; from?: string; to?: string }
}

export interface EventPage {
  data: FixloopEvent[]
  /** Pass as `after` to continue. */
  nextAfter: number
}

export interface EventListParams {
  after?: number
  limit?: number
  types?: EventType[]
  appId?: string
}

export interface Webhook {
  id: string
  url: string
  events: EventType[]
  appId?: string | null
  /** Only in the answer to create (shown once). */
  secret?: string
  [key: string]: unknown
}

export interface WebhookCreateParams {
  url: string
  events?: EventType[]
  appId?: string
}

export interface WebhookDelivery {
  id: string
  [key: string]: unknown
}
