/** TypeBox schemas of the webhooks API. Every object is closed: unknown fields are invalid_body. */
import { t } from 'elysia'
import { ID_PATTERN } from '../../core/ids'
import { EVENT_TYPES } from '../../lifecycle/event-types'
import { URL_MAX_LENGTH } from './ssrf'
import { EVENT_FILTER_MAX } from './service'

const closed = { additionalProperties: false } as const
const Id = t.String({ pattern: ID_PATTERN, description: '24-character lowercase hex id' })
const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(s: T) => t.Union([s, t.Null()])
const EventTypeList = t.Array(t.String({ maxLength: 64 }), { maxItems: EVENT_FILTER_MAX, description: `Event types to send; empty or absent: all. Known: ${EVENT_TYPES.join(', ')}` })

export const CreateWebhookBody = t.Object(
  {
    url: t.String({ minLength: 1, maxLength: URL_MAX_LENGTH, description: 'http(s) URL of your receiver' }),
    events: t.Optional(EventTypeList),
    appId: t.Optional(Id),
  },
  closed,
)

export const RedeliverFailedBody = t.Object(
  {
    since: t.String({ maxLength: 40, description: 'ISO 8601: deliveries created at or after' }),
    until: t.String({ maxLength: 40, description: 'ISO 8601: deliveries created before' }),
  },
  closed,
)

export const WebhookParams = t.Object({ id: Id }, closed)

export const DeliveriesQuery = t.Object(
  {
    limit: t.Optional(t.Numeric({ minimum: 1, maximum: 200, multipleOf: 1, description: 'Default 50' })),
    cursor: t.Optional(t.String({ pattern: ID_PATTERN, description: 'The id of the last delivery of the previous page' })),
  },
  closed,
)

export const Webhook = t.Object(
  {
    id: Id,
    url: t.String(),
    appId: Nullable(Id),
    events: t.Array(t.String()),
    enabled: t.Boolean(),
    disabledReason: Nullable(t.String()),
    failingSince: Nullable(t.String({ format: 'date-time' })),
    previousSecretValidUntil: Nullable(t.String({ format: 'date-time', description: 'While set, deliveries carry a second signature made with the previous secret' })),
    createdAt: t.String({ format: 'date-time' }),
  },
  closed,
)

export const CreatedWebhook = t.Object({ ...Webhook.properties, secret: t.String({ description: 'whsec_…: shown once, keep it safe' }) }, closed)
export const WebhookList = t.Object({ data: t.Array(Webhook) }, closed)
export const RotatedSecret = t.Object({ id: Id, secret: t.String(), previousSecretValidUntil: t.String({ format: 'date-time' }) }, closed)
export const TestSent = t.Object({ webhookId: Id, seq: t.Integer({ description: 'Seq of the webhook.test event' }) }, closed)
export const Deleted = t.Object({ id: Id, deleted: t.Literal(true) }, closed)
export const Redelivered = t.Object({ id: Id, status: t.Literal('pending') }, closed)
export const RedeliveredFailed = t.Object({ webhookId: Id, redelivered: t.Integer() }, closed)

const Attempt = t.Object(
  {
    attempt: t.Integer(),
    at: t.String({ format: 'date-time' }),
    requestHeaders: t.Record(t.String(), t.String()),
    requestBody: t.String(),
    responseStatus: Nullable(t.Integer()),
    responseBody: Nullable(t.String({ description: 'First 4 KB of the answer' })),
    error: Nullable(t.String({ description: 'timeout, connection failure or target refused by the SSRF guard' })),
    latencyMs: t.Integer(),
  },
  closed,
)

export const Delivery = t.Object(
  {
    id: Id,
    webhookId: Id,
    eventId: t.String({ description: 'Sent as webhook-id' }),
    eventSeq: t.Integer(),
    eventType: t.String(),
    status: t.Union([t.Literal('pending'), t.Literal('succeeded'), t.Literal('failed')]),
    attempts: t.Integer(),
    nextAttemptAt: Nullable(t.String({ format: 'date-time' })),
    lastStatus: Nullable(t.Integer()),
    createdAt: t.String({ format: 'date-time' }),
    updatedAt: t.String({ format: 'date-time' }),
    log: t.Array(Attempt),
  },
  closed,
)

export const DeliveryPage = t.Object({ data: t.Array(Delivery), nextCursor: Nullable(Id) }, closed)
