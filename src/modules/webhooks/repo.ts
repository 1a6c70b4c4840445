/**
 * Webhook endpoints, deliveries and attempts. Every read a caller can name takes the Org, so a cross-Org
 * id simply finds nothing.
 *
 * The port: the SQLite side (src/db/sqlite/webhooks.ts) and the PostgreSQL side (src/db/pg/webhooks.ts),
 * both held to test/repos/webhooks.test.ts. Each change is one transaction with its audit rows (and its
 * event, when it records one).
 */
import type { AuditEntry } from '../audit/entry'
import type { EventRow } from '../events/repo'

export interface WebhookRow {
  id: string
  org_id: string
  app_id: string | null
  url: string
  event_types: string
  secret_sealed: string
  previous_secret_sealed: string | null
  previous_secret_until: number | null
  cursor_seq: number
  enabled: boolean
  disabled_reason: string | null
  failing_since: number | null
  created_at: number
  deleted_at: number | null
}

export interface DeliveryRow {
  id: string
  webhook_id: string
  org_id: string
  event_id: string
  event_seq: number
  event_type: string
  payload: string
  status: 'pending' | 'succeeded' | 'failed'
  attempts: number
  schedule_index: number
  next_attempt_at: number | null
  lease_until: number | null
  last_status: number | null
  created_at: number
  updated_at: number
}

export interface AttemptRow {
  id: string
  delivery_id: string
  webhook_id: string
  org_id: string
  attempt: number
  request_headers: string
  request_body: string
  response_status: number | null
  response_body: string | null
  error: string | null
  latency_ms: number
  created_at: number
}

export interface NewWebhook {
  id: string
  orgId: string
  appId: string | null
  url: string
  eventTypes: string
  secretSealed: string
  createdAt: number
}

/** What one attempt came to, for `settle` (the dispatcher's decision; the repo writes it). */
export interface AttemptOutcome {
  attempt: AttemptRow
  delivery: Pick<DeliveryRow, 'id' | 'attempts' | 'schedule_index'>
  webhook: Pick<WebhookRow, 'id' | 'org_id' | 'app_id'>
  /** 2xx: succeeded; 410: failed and the endpoint disabled; anything else: retried while it can be. */
  kind: 'succeeded' | 'gone' | 'failed'
  lastStatus: number | null
  now: number
  /** A failure's delay before the next try; undefined: no more tries. Asked only while the endpoint is enabled. */
  retryDelay: () => number | undefined
  /** A failing endpoint is disabled once its failures have lasted this long (ms). */
  disableAfterMs: number
}

/** What `settle` wrote: false when another dispatcher had settled this attempt already (nothing written). */
export interface SettleResult {
  settled: boolean
  /** Set when this settle disabled the endpoint: why. */
  disabled?: string
}

export type FanOutMatch = (w: WebhookRow, e: Pick<EventRow, 'type' | 'app_id' | 'data'>) => boolean

export interface WebhooksRepo {
  get(orgId: string, id: string): Promise<WebhookRow | null>
  /** A live endpoint by id alone (the dispatcher, the CLI). */
  getAny(id: string): Promise<WebhookRow | null>
  list(orgId: string): Promise<WebhookRow[]>
  /**
   * Every Org's live endpoints that are behind: the Org has an event past the cursor. What a dispatcher
   * pass fans out, in one statement whose cost is a few index seeks per Org with live endpoints and one
   * row per endpoint behind (db/sql/webhooks.ts): an idle pass reads no endpoint, however many there are.
   */
  behind(): Promise<WebhookRow[]>
  /** One Org's live endpoints that are behind (a wake for the Org's new events), by id. */
  behindInOrg(orgId: string): Promise<WebhookRow[]>
  appInOrg(orgId: string, appId: string): Promise<boolean>
  orgExists(orgId: string): Promise<boolean>

  /**
   * Inserts the endpoint with its cursor at the Org's last seq, read in the same transaction: it gets
   * exactly the events committed after it exists. With `max` (> 0): only while the Org has fewer live
   * endpoints, counted in that transaction; false (nothing written) when it has `max` already.
   */
  insert(row: NewWebhook, audit: AuditEntry[], max?: number): Promise<boolean>
  /** Soft-deletes the endpoint and fails what it had pending; false (nothing written) when it was gone. */
  delete(orgId: string, id: string, now: number, audit: AuditEntry[]): Promise<boolean>
  /** New sealed secret; the old one signs alongside until `previousUntil`. False when the endpoint is gone. */
  rotate(orgId: string, id: string, sealed: string, previousUntil: number, audit: AuditEntry[]): Promise<boolean>
  /** Appends a webhook.test event for the endpoint; `audit` is given its seq. Returns the seq. */
  appendTest(w: Pick<WebhookRow, 'id' | 'org_id' | 'app_id'>, audit: (seq: number) => AuditEntry[]): Promise<number>
  /**
   * Enables the endpoint; its cursor stays where it stopped, so it catches up on the events committed while
   * it was disabled (and any committed before the disable that it had not fanned out yet), in order.
   */
  enable(orgId: string, id: string, audit: AuditEntry[]): Promise<boolean>

  /**
   * Turns up to `limit` of the Org's events past the endpoint's cursor into delivery rows and moves the
   * cursor past them, in one transaction (compare-and-set on the cursor). The number of events looked at.
   */
  fanOutPage(orgId: string, webhookId: string, limit: number, matches: FanOutMatch, newId: () => string, now: number): Promise<number>
  /**
   * Leases up to `limit` due deliveries of enabled endpoints (not in `busy`) until `leaseUntil`: each is
   * claimed by one dispatcher only (PostgreSQL: FOR UPDATE SKIP LOCKED). On PostgreSQL "due" and the
   * lease are the database's clock: the lease lasts `leaseUntil - now` from the database's now.
   * Nothing of the Orgs in `fullOrgs` (at their share of the pool: the dispatcher keeps one Org from taking
   * every slot).
   */
  claim(now: number, leaseUntil: number, limit: number, busy: string[], fullOrgs: string[]): Promise<DeliveryRow[]>
  /** Releases every lease: the dispatcher starting (the one process, or the node taking the `dispatch` role) holds none yet, so every lease left is a predecessor's. */
  releaseLeases(): Promise<void>
  nextDue(): Promise<number | null>
  /**
   * Writes an attempt: its log row, the delivery's next step (compare-and-set on its attempt count, so an
   * attempt is settled once), the endpoint's health, and, when it must be disabled, the disable with its
   * webhook.disabled event.
   */
  settle(o: AttemptOutcome): Promise<SettleResult>
  /** Disables the endpoint (if enabled), fails its pending deliveries and records webhook.disabled. */
  disable(w: Pick<WebhookRow, 'id' | 'org_id' | 'app_id'>, reason: string, now: number): Promise<boolean>

  getDelivery(orgId: string, id: string): Promise<DeliveryRow | null>
  /** The endpoint's deliveries newest first, with ids below `before`. */
  deliveries(orgId: string, webhookId: string, before: string, limit: number): Promise<DeliveryRow[]>
  attemptsOf(deliveryIds: string[]): Promise<AttemptRow[]>
  /** Sends one delivery again with a fresh schedule; false when it is being attempted (leased) or not found. */
  redeliver(orgId: string, id: string, now: number, audit: AuditEntry[]): Promise<boolean>
  /** Every failed delivery of the endpoint created in [from, to) again; `audit` is given the count. */
  redeliverFailed(orgId: string, webhookId: string, from: number, to: number, now: number, audit: (n: number) => AuditEntry[]): Promise<number>
  /** The Org of a delivery, for the CLI (which has no Org key to scope by). */
  deliveryOrg(id: string): Promise<string | null>
  /** Deletes settled deliveries and attempts created before `before`, in slices. */
  purge(before: number): Promise<number>
}

