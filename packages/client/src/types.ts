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
export type AppTriageState = Open<Api.AppTriageState>
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

/** One entry of the event outbox (ids and states, never report text), discriminated by `type`. */
export type KnownEvent = Api.EventPage['data'][number]
/**
 * The shape of an event whose type this client version does not know yet (new types ship additively).
 * It is not part of FixloopEvent, because a member with a non-literal `type` would stop TypeScript from
 * narrowing `if (e.type === 'feedback.status_changed')`; handle a `default:` case instead.
 */
export interface UnknownEvent {
  id: string
  seq: number
  type: string & {}
  createdAt: string
  appId: string | null
  data: Record<string, unknown>
}
export type FixloopEvent = KnownEvent
/** Event types named by the contract; the union stays open. */
export type EventType = KnownEvent['type'] | (string & {})

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

export type Webhook = Open<Api.Webhook>
/** The answer to create and rotate: carries the `whsec_…` secret, shown once. */
export type WebhookCreated = Open<Api.WebhookCreated>
export type WebhookCreateParams = Api.WebhookCreateParams
export type WebhookSecretRotated = Api.WebhookSecretRotated
export type WebhookTestSent = Open<Api.WebhookTestSent>
export type WebhookDelivery = Open<Api.DeliveryPage['data'][number]>
export type DeliveryPage = Open<Api.DeliveryPage>
export type DeliveryListParams = Api.DeliveryListParams
export type RedeliverFailedParams = Api.RedeliverFailedParams
export type RedeliverFailedResult = Open<Api.RedeliverFailedResult>
export type RedeliverResult = Open<Api.RedeliverResult>
