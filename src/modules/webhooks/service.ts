/**
 * The rules of webhook endpoints, shared by the HTTP routes and the CLI: create (SSRF-checked, secret
 * shown once and sealed at rest), list, delete, rotate (24-hour dual signing), send a test event,
 * read the delivery log, redeliver one delivery or every failed one in a time range, re-enable.
 * Every method takes the Org: another Org's ids are not_found. Every change takes who made it and is
 * written to the audit log in the change's own transaction (ids and hosts, never a URL's path or a secret).
 */
import { ApiError } from '../../core/errors'
import type { Store } from '../../db/store'
import type { SecretBox } from '../../core/crypto'
import type { Clock } from '../../core/clock'
import type { Config } from '../../config'
import { isoUtc } from '../../core/clock'
import { newId } from '../../core/ids'
import { isEventType, unknownEventTypesMessage } from '../../lifecycle/event-types'
import { checkTarget } from './ssrf'
import { newWebhookSecret } from './signature'
import { type AttemptRow, type DeliveryRow, type WebhookRow } from './repo'
import type { ActedBy, AuditEntry } from '../audit/entry'
import { parseIsoTime } from '../../core/iso-time'

export const ROTATION_OVERLAP_MS = 24 * 3600_000
export const EVENT_FILTER_MAX = 50

export interface WebhookInput {
  url: string
  events?: string[]
  appId?: string
}

/** What this service is given: the repositories and values it uses (a Context has them all). */
export interface WebhooksDeps {
  store: Pick<Store, 'webhooks'>
  box: SecretBox
  clock: Clock
  config: Pick<Config, 'webhookAllowPrivate' | 'webhooksPerOrg'>
}

export function presentWebhook(w: WebhookRow, now = Date.now()) {
  return {
    id: w.id,
    url: w.url,
    appId: w.app_id,
    events: JSON.parse(w.event_types) as string[],
    enabled: w.enabled,
    disabledReason: w.disabled_reason,
    failingSince: w.failing_since === null ? null : isoUtc(w.failing_since),
    previousSecretValidUntil: w.previous_secret_until !== null && w.previous_secret_until > now ? isoUtc(w.previous_secret_until) : null,
    createdAt: isoUtc(w.created_at),
  }
}

function presentAttempt(a: AttemptRow) {
  return {
    attempt: a.attempt,
    at: isoUtc(a.created_at),
    requestHeaders: JSON.parse(a.request_headers) as Record<string, string>,
    requestBody: a.request_body,
    responseStatus: a.response_status,
    responseBody: a.response_body,
    error: a.error,
    latencyMs: a.latency_ms,
  }
}

export function presentDelivery(d: DeliveryRow, attempts: AttemptRow[]) {
  return {
    id: d.id,
    webhookId: d.webhook_id,
    eventId: d.event_id,
    eventSeq: d.event_seq,
    eventType: d.event_type,
    status: d.status,
    attempts: d.attempts,
    nextAttemptAt: d.status === 'pending' && d.next_attempt_at !== null ? isoUtc(d.next_attempt_at) : null,
    lastStatus: d.last_status,
    createdAt: isoUtc(d.created_at),
    updatedAt: isoUtc(d.updated_at),
    log: attempts.map(presentAttempt),
  }
}

export interface WebhooksServiceOptions {
  /** Whether private targets are allowed (default: this process's FIXLOOP_WEBHOOK_ALLOW_PRIVATE). */
  allowPrivate?: boolean
  /** How a refusal of a private target tells the operator to allow one. */
  privateHint?: string
}

export function createWebhooksService(ctx: WebhooksDeps, options: WebhooksServiceOptions = {}) {
  const repo = ctx.store.webhooks
  /** The audit row of a change, written by the repo in the change's own transaction. */
  const entry = (by: ActedBy, orgId: string, action: string, targetId: string, data: Record<string, unknown> = {}): AuditEntry => ({ orgId, actor: by.actor, ip: by.ip, action, targetId, data })
  const allowPrivate = options.allowPrivate ?? ctx.config.webhookAllowPrivate

  async function require(orgId: string, id: string): Promise<WebhookRow> {
    const w = await repo.get(orgId, id)
    if (!w) throw new ApiError('not_found')
    return w
  }

  async function checkApp(orgId: string, appId: string): Promise<void> {
    if (!(await repo.appInOrg(orgId, appId))) throw new ApiError('app_not_found')
  }

  function checkEvents(list: string[]): string[] {
    const unknown = list.filter((e) => !isEventType(e))
    if (unknown.length > 0) throw new ApiError('invalid_body', { issues: [{ path: '/events', message: unknownEventTypesMessage(unknown) }] })
    return [...new Set(list)]
  }

  return {
    repo,

    /**
     * Creates an endpoint that receives events from now on; the secret is in this answer only.
     * `confirm`: called once the endpoint is checked, before it is stored; the route asks a dashboard
     * session there for a fresh re-authentication (a typo in the URL then costs no confirmation).
     */
    async create(orgId: string, input: WebhookInput, by: ActedBy, confirm?: () => Promise<void>) {
      // Every dispatcher pass (5 a second) walks every live endpoint of every Org: 20,000 endpoints of one
      // Org, made with its sk_ key at the rate limit's pace, kept a core busy and slowed every other Org's
      // submissions from 2 ms to 700 ms. So an Org has at most FIXLOOP_WEBHOOKS_PER_ORG of them: refused
      // here before the target's checks, and held again in the insert's transaction (creates racing at the cap).
      const max = ctx.config.webhooksPerOrg
      const atCap = () => new ApiError('invalid_argument', { limit: 'FIXLOOP_WEBHOOKS_PER_ORG', max }, `This Org already has ${max} webhook endpoints, the most it may have (FIXLOOP_WEBHOOKS_PER_ORG): delete one first.`)
      if (max > 0 && (await repo.list(orgId)).length >= max) throw atCap()
      const eventTypes = checkEvents(input.events ?? [])
      if (input.appId) await checkApp(orgId, input.appId)
      await checkTarget(input.url, allowPrivate, { allowUnresolved: true, hint: options.privateHint })
      await confirm?.()
      const secret = newWebhookSecret()
      const id = newId(ctx.clock)
      const row = {
        id,
        orgId,
        appId: input.appId ?? null,
        url: input.url,
        eventTypes: JSON.stringify(eventTypes),
        secretSealed: ctx.box.seal(Buffer.from(secret)),
        createdAt: ctx.clock.now(),
      }
      // The cursor starts at the Org's last event, read in the insert's transaction: an endpoint gets
      // exactly the events committed after it exists.
      // The host only: a webhook URL's path or query may carry a token of the receiver's.
      if (!(await repo.insert(row, [entry(by, orgId, 'webhook.created', id, { host: new URL(input.url).host, events: eventTypes, appId: row.appId })], max))) throw atCap()
      return { ...presentWebhook(await require(orgId, id), ctx.clock.now()), secret }
    },

    list: async (orgId: string) => (await repo.list(orgId)).map((w) => presentWebhook(w, ctx.clock.now())),

    get: async (orgId: string, id: string) => presentWebhook(await require(orgId, id), ctx.clock.now()),

    async delete(orgId: string, id: string, by: ActedBy) {
      await require(orgId, id)
      await repo.delete(orgId, id, ctx.clock.now(), [entry(by, orgId, 'webhook.deleted', id)])
      return { id, deleted: true as const }
    },

    /**
     * New secret; the old one keeps signing alongside it for 24 hours. `confirm`: as for `create` (whoever
     * holds the secret can sign deliveries the receiver believes, after the session too).
     */
    async rotateSecret(orgId: string, id: string, by: ActedBy, confirm?: () => Promise<void>) {
      await require(orgId, id)
      await confirm?.()
      const secret = newWebhookSecret()
      const until = ctx.clock.now() + ROTATION_OVERLAP_MS
      if (!(await repo.rotate(orgId, id, ctx.box.seal(Buffer.from(secret)), until, [entry(by, orgId, 'webhook.secret_rotated', id)]))) throw new ApiError('not_found')
      return { id, secret, previousSecretValidUntil: isoUtc(until) }
    },

    /** Appends a webhook.test event; the dispatcher routes it to this endpoint only. */
    async sendTest(orgId: string, id: string, by: ActedBy) {
      const w = await require(orgId, id)
      if (!w.enabled) throw new ApiError('webhook_disabled')
      const seq = await repo.appendTest(w, (seq) => [entry(by, orgId, 'webhook.tested', id, { seq })])
      return { webhookId: id, seq }
    },

    async enable(orgId: string, id: string, by: ActedBy) {
      await require(orgId, id)
      // The cursor stays put: the events committed while it was disabled follow, oldest first. Deliveries
      // that failed (those the disable left unsent included) are sent again by redeliverFailed only.
      await repo.enable(orgId, id, [entry(by, orgId, 'webhook.enabled', id)])
      return presentWebhook(await require(orgId, id), ctx.clock.now())
    },

    async deliveries(orgId: string, id: string, opts: { limit?: number; cursor?: string } = {}) {
      await require(orgId, id)
      const limit = opts.limit ?? 50
      const rows = await repo.deliveries(orgId, id, opts.cursor ?? 'g', limit)
      const attempts = await repo.attemptsOf(rows.map((r) => r.id))
      const data = rows.map((d) =>
        presentDelivery(
          d,
          attempts.filter((a) => a.delivery_id === d.id),
        ),
      )
      return { data, nextCursor: rows.length === limit ? rows[rows.length - 1].id : null }
    },

    /** Sends one delivery again (same webhook-id), with a fresh retry schedule. */
    async redeliver(orgId: string, deliveryId: string, by: ActedBy) {
      const d = await repo.getDelivery(orgId, deliveryId)
      if (!d) throw new ApiError('not_found')
      const w = await repo.get(orgId, d.webhook_id)
      if (!w) throw new ApiError('not_found')
      if (!w.enabled) throw new ApiError('webhook_disabled')
      if (!(await repo.redeliver(orgId, deliveryId, ctx.clock.now(), [entry(by, orgId, 'webhook.redelivered', w.id, { deliveryId })]))) {
        throw new ApiError('concurrent_update', undefined, 'This delivery is being attempted right now; try again in a moment.')
      }
      return { id: deliveryId, status: 'pending' as const }
    },

    /** Sends again every failed delivery of the endpoint created in [since, until). */
    async redeliverFailed(orgId: string, id: string, since: string, until: string, by: ActedBy) {
      const w = await require(orgId, id)
      if (!w.enabled) throw new ApiError('webhook_disabled')
      const from = parseIsoTime(since)
      const to = parseIsoTime(until)
      if (from === undefined || to === undefined || from >= to) {
        throw new ApiError('invalid_body', { issues: [{ path: '/since', message: 'since and until must be ISO 8601 times with since < until' }] })
      }
      const redelivered = await repo.redeliverFailed(orgId, id, from, to, ctx.clock.now(), (n) => [
        entry(by, orgId, 'webhook.failed_redelivered', id, { since, until, redelivered: n }),
      ])
      return { webhookId: id, redelivered }
    },
  }
}
export type WebhooksService = ReturnType<typeof createWebhooksService>
