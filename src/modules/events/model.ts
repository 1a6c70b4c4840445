/**
 * TypeBox schemas of the events API: the query of the pull feed and the stream, and one schema per
 * event type (so /openapi.json documents every payload). Payloads carry ids and states, never report text.
 */
import { t, type TSchema } from 'elysia'
import { ID_PATTERN } from '../../core/ids'
import { FEEDBACK_STATUSES } from '../../core/fsm'
import { EVENT_TYPES } from '../../lifecycle/event-types'
import { oneOf } from '../../core/schema'

const closed = { additionalProperties: false } as const
const Id = t.String({ pattern: ID_PATTERN, description: '24-character lowercase hex id' })
const Status = oneOf(FEEDBACK_STATUSES)

export const EVENTS_LIMIT_MAX = 500
export const EVENTS_LIMIT_DEFAULT = 100
/** Highest `after` accepted (the query reader takes up to 9 digits). */
export const SEQ_MAX = 999_999_999

// `after` and `limit` are read and range-checked by readIntQuery (http/query.ts), which names the parameter
// at fault; the schema only documents them. As t.Numeric, a failing value reached the error handler without
// its name, and `after=0&limit=0` was reported at /after, the first parameter holding a 0.
const Cursor = t.String({ maxLength: 16, description: `A seq (integer 0-${SEQ_MAX}): only events after it` })
const Types = t.String({
  maxLength: 2000,
  pattern: '^[a-z_]+\\.[a-z_]+(,[a-z_]+\\.[a-z_]+)*$',
  description: `Comma-separated event types (${EVENT_TYPES.join(', ')})`,
})

export const EventsQuery = t.Object(
  {
    after: t.Optional(Cursor),
    limit: t.Optional(t.String({ maxLength: 16, description: `Integer 1-${EVENTS_LIMIT_MAX}, default ${EVENTS_LIMIT_DEFAULT}` })),
    types: t.Optional(Types),
    appId: t.Optional(Id),
  },
  closed,
)

export const StreamQuery = t.Object({ after: t.Optional(Cursor), types: t.Optional(Types), appId: t.Optional(Id) }, closed)

const PAYLOADS: Record<(typeof EVENT_TYPES)[number], TSchema> = {
  'feedback.received': t.Object({ feedbackId: Id, status: Status }),
  'feedback.status_changed': t.Object({ feedbackId: Id, from: Status, to: Status, reason: t.Optional(t.Union([t.String(), t.Null()])) }),
  'feedback.duplicate_attached': t.Object({
    feedbackId: Id,
    leadFeedbackId: Id,
    duplicateCount: t.Integer(),
    manual: t.Boolean(),
    automatic: t.Optional(t.Boolean({ description: 'True when clustering merged it, false for a merge by hand (absent on events recorded before 0.2)' })),
    score: t.Optional(t.Union([t.Number({ minimum: 0, maximum: 1 }), t.Null()], { description: 'The merge\'s score; null for a merge by hand that confirmed no suggestion' })),
  }),
  'feedback.duplicate_suggested': t.Object({ feedbackId: Id, leadFeedbackId: Id, score: t.Number({ minimum: 0, maximum: 1 }) }),
  'feedback.unmerged': t.Object({ feedbackId: Id, leadFeedbackId: Id, duplicateCount: t.Integer() }),
  'feedback.resolved': t.Object({
    feedbackId: Id,
    leadFeedbackId: Id,
    prUrl: t.Union([t.String(), t.Null()], { description: 'The merged pull/merge request' }),
    externalUserId: t.Union([t.String(), t.Null()], { description: "The submitter's `sub` from the user token, for a report submitted in private mode; null otherwise. Never the report's text or email." }),
  }),
  'agent_run.started': t.Object({ runId: Id, feedbackId: Id, provider: t.String() }),
  'agent_run.phase': t.Object({
    runId: Id,
    feedbackId: Id,
    phase: oneOf(['prepare', 'clone', 'agent', 'verify', 'guardrails', 'push', 'pr'] as const),
    durationMs: t.Integer({ minimum: 0, description: 'How long the phase took, in milliseconds' }),
  }),
  'agent_run.succeeded': t.Object({ runId: Id, feedbackId: Id, prUrl: t.Union([t.String(), t.Null()], { description: 'Null in branch mode (`--host none` or `--pr-mode branch`): the branch was pushed, no pull request opened; the report is `pr_opened` with `mergeRequestUrl` null' }), branch: t.String(), costUsd: t.Number() }),
  'agent_run.failed': t.Object({ runId: Id, feedbackId: Id, error: t.String({ description: 'A short cause, never report text' }) }),
  'agent_run.guardrailed': t.Object({ runId: Id, feedbackId: Id, guardrailReason: t.String() }),
  'webhook.disabled': t.Object({ webhookId: Id, reason: t.String() }),
  'webhook.test': t.Object({ webhookId: Id }),
}

/** One schema per event type, named for the OpenAPI document. */
export const EVENT_SCHEMAS = EVENT_TYPES.map((type) =>
  t.Object(
    {
      id: t.String({ pattern: ID_PATTERN, description: 'Stable event id; the webhook-id header of its deliveries' }),
      seq: t.Integer({ description: 'Rises by one per Org with every event: the cursor' }),
      type: t.Literal(type),
      createdAt: t.String({ format: 'date-time' }),
      appId: t.Union([Id, t.Null()], { description: 'Null for Org-wide events' }),
      data: PAYLOADS[type],
    },
    { title: `Event ${type}`, description: `The ${type} event` },
  ),
)

export const Event = t.Union(EVENT_SCHEMAS, { description: 'An event; consumers must ignore types they do not know (the list grows)' })

export const EventsPage = t.Object({ data: t.Array(Event), nextAfter: t.Integer({ description: 'Pass as `after` for the next page' }) }, closed)
