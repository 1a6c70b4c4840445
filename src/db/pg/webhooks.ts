/**
 * PostgreSQL side of modules/webhooks/repo.ts. Every read-then-write locks what it read (the endpoint row
 * FOR UPDATE) or compares-and-sets in its UPDATE; due deliveries are claimed FOR UPDATE SKIP LOCKED, so
 * two dispatchers (two nodes) never lease the same delivery.
 */
import type { PoolClient } from 'pg'
import type { Clock } from '../../core/clock'
import { eventBody, type EventRow } from '../../modules/events/repo'
import type { AttemptRow, DeliveryRow, SettleResult, WebhookRow, WebhooksRepo } from '../../modules/webhooks/repo'
import { pgAudited } from './audit-writer'
import { appendEventPg, PG_LAST_SEQ_SQL } from './outbox'
import { exec, many, one, type PgQueryable, type PgStorage } from './storage'
import { nowOr } from './db-clock'
import { WEBHOOK_PASS_SQL } from '../sql/webhooks'
import { underCap } from './org-caps'

const EVENT_COLUMNS = 'id, org_id, app_id, seq, type, data, created_at'
const DROP_PENDING = "UPDATE webhook_deliveries SET status = 'failed', lease_until = NULL, next_attempt_at = NULL, updated_at = $1 WHERE webhook_id = $2 AND status = 'pending'"
/**
 * In order per endpoint: at most one attempt in flight for an endpoint (a live lease), and its next one is
 * the due delivery of the lowest seq. The endpoint's row is locked (SKIP LOCKED) while it is chosen, so two
 * dispatchers claiming at once (a `dispatch` handover) never both start an attempt for one endpoint.
 * Due times and leases are the database's clock (src/db/pg/db-clock.ts), not the dispatching node's: $1
 * is NULL but for a store whose clock a test drives, $2 the lease's length.
 */
const CLAIM = `WITH clock AS (SELECT ${nowOr('$1')} AS now)
  UPDATE webhook_deliveries SET lease_until = (SELECT now FROM clock) + $2::bigint
  WHERE id IN (SELECT next.id FROM webhooks w
               CROSS JOIN LATERAL (SELECT d.id FROM webhook_deliveries d
                                   WHERE d.webhook_id = w.id AND d.status = 'pending' AND d.next_attempt_at <= (SELECT now FROM clock)
                                     AND NOT (d.id = ANY($4::text[]))
                                   ORDER BY d.event_seq LIMIT 1) next
               WHERE w.enabled AND w.deleted_at IS NULL AND NOT (w.org_id = ANY($5::text[]))
                 AND NOT EXISTS (SELECT 1 FROM webhook_deliveries b
                                 WHERE b.webhook_id = w.id AND b.lease_until IS NOT NULL AND b.lease_until >= (SELECT now FROM clock) AND b.status = 'pending')
               LIMIT $3
               FOR UPDATE OF w SKIP LOCKED)
    AND status = 'pending' AND (lease_until IS NULL OR lease_until < (SELECT now FROM clock))
  RETURNING *`
const BEHIND_IN_ORG = WEBHOOK_PASS_SQL.behindInOrg('$1')
const SETTLE = `UPDATE webhook_deliveries SET status = $3, attempts = attempts + 1, schedule_index = $4, next_attempt_at = $5,
  lease_until = NULL, last_status = $6, updated_at = $7 WHERE id = $1 AND attempts = $2`
const INSERT_ATTEMPT = `INSERT INTO webhook_attempts (id, delivery_id, webhook_id, org_id, attempt, request_headers, request_body, response_status, response_body, error, latency_ms, created_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`
const REDELIVER_SET = "status = 'pending', schedule_index = 0, next_attempt_at = $1, lease_until = NULL, updated_at = $1"

export function createPgWebhooksRepo(storage: PgStorage, clock: Clock): WebhooksRepo {
  const { pool } = storage
  const lastSeq = async (q: PgQueryable, orgId: string) => (await one<{ last_seq: number }>(q, PG_LAST_SEQ_SQL, [orgId]))!.last_seq
  const getAny = async (q: PgQueryable, id: string, lock = false) =>
    (await one<WebhookRow>(q, `SELECT * FROM webhooks WHERE id = $1 AND deleted_at IS NULL${lock ? ' FOR UPDATE' : ''}`, [id])) ?? null
  const audited = pgAudited(storage, clock)
  const disable = async (c: PoolClient, w: Pick<WebhookRow, 'id' | 'org_id' | 'app_id'>, reason: string, now: number): Promise<boolean> => {
    if ((await exec(c, 'UPDATE webhooks SET enabled = false, disabled_reason = $1 WHERE id = $2 AND enabled', [reason, w.id])) === 0) return false
    await exec(c, DROP_PENDING, [now, w.id])
    await appendEventPg(c, clock, { orgId: w.org_id, appId: w.app_id, type: 'webhook.disabled', data: { webhookId: w.id, reason } })
    return true
  }

  return {
    get: async (orgId, id) => (await one<WebhookRow>(pool, 'SELECT * FROM webhooks WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL', [orgId, id])) ?? null,
    getAny: (id) => getAny(pool, id),
    list: (orgId) => many<WebhookRow>(pool, 'SELECT * FROM webhooks WHERE org_id = $1 AND deleted_at IS NULL ORDER BY id', [orgId]),
    behind: () => many<WebhookRow>(pool, WEBHOOK_PASS_SQL.behind),
    behindInOrg: (orgId) => many<WebhookRow>(pool, BEHIND_IN_ORG, [orgId]),
    appInOrg: async (orgId, appId) => !!(await one(pool, 'SELECT 1 FROM apps WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL', [orgId, appId])),
    orgExists: async (orgId) => !!(await one(pool, 'SELECT 1 FROM orgs WHERE id = $1', [orgId])),

    insert: (row, audit, max = 0) =>
      audited(
        () => audit,
        async (c) => {
          if (max > 0 && !(await underCap(c, 'webhooks', row.orgId, max))) return false
          await exec(
            c,
            `INSERT INTO webhooks (id, org_id, app_id, url, event_types, secret_sealed, cursor_seq, enabled, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, true, $8)`,
            [row.id, row.orgId, row.appId, row.url, row.eventTypes, row.secretSealed, await lastSeq(c, row.orgId), row.createdAt],
          )
          return true
        },
      ),
    delete: (orgId, id, now, audit) =>
      audited(
        () => audit,
        async (c) => {
          if ((await exec(c, 'UPDATE webhooks SET deleted_at = $1 WHERE org_id = $2 AND id = $3 AND deleted_at IS NULL', [now, orgId, id])) === 0) return false
          await exec(c, DROP_PENDING, [now, id])
          return true
        },
      ),
    rotate: (orgId, id, sealed, until, audit) =>
      audited(
        () => audit,
        async (c) =>
          (await exec(
            c,
            'UPDATE webhooks SET previous_secret_sealed = secret_sealed, previous_secret_until = $1, secret_sealed = $2 WHERE org_id = $3 AND id = $4 AND deleted_at IS NULL',
            [until, sealed, orgId, id],
          )) > 0,
      ),
    appendTest: (w, audit) => audited(audit, (c) => appendEventPg(c, clock, { orgId: w.org_id, appId: w.app_id, type: 'webhook.test', data: { webhookId: w.id } })),
    enable: (orgId, id, audit) =>
      audited(
        () => audit,
        async (c) =>
          (await exec(
            c,
            // The cursor stays where the endpoint stopped: it catches up on what was committed meanwhile.
            'UPDATE webhooks SET enabled = true, disabled_reason = NULL, failing_since = NULL WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL',
            [orgId, id],
          )) > 0,
      ),

    fanOutPage: (orgId, webhookId, limit, matches, newId, now) =>
      storage.tx(async (c) => {
        // The endpoint's row locked: two dispatchers fan out one endpoint's page one after the other.
        const fresh = await getAny(c, webhookId, true)
        if (!fresh || !fresh.enabled) return 0
        const rows = await many<EventRow>(c, `SELECT ${EVENT_COLUMNS} FROM events WHERE org_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, [orgId, fresh.cursor_seq, limit])
        if (rows.length === 0) return 0
        for (const e of rows) {
          if (!matches(fresh, e)) continue
          await exec(
            c,
            `INSERT INTO webhook_deliveries (id, webhook_id, org_id, event_id, event_seq, event_type, payload, status, next_attempt_at, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $8, $8) ON CONFLICT (webhook_id, event_id) DO NOTHING`,
            [newId(), webhookId, orgId, e.id, e.seq, e.type, eventBody(e), now],
          )
        }
        await exec(c, 'UPDATE webhooks SET cursor_seq = $1 WHERE id = $2 AND cursor_seq = $3', [rows[rows.length - 1].seq, webhookId, fresh.cursor_seq])
        return rows.length
      }),
    claim: async (now, leaseUntil, limit, busy, fullOrgs) => {
      // A read before the claim: most polls find nothing due, and those need no transaction.
      const at = storage.callerClock ? now : null
      if (!(await one(pool, `SELECT 1 FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= ${nowOr('$1')} LIMIT 1`, [at]))) return []
      return many<DeliveryRow>(pool, CLAIM, [at, leaseUntil - now, limit, busy, fullOrgs])
    },
    releaseLeases: async () => {
      // Called by the dispatcher as it starts, which in cluster mode is when its node takes the `dispatch`
      // role: the one node that delivers. Leases left are its predecessor's (a node that died or lost the
      // role): handed back at once rather than after they run out (a minute past one attempt's timeout).
      // An attempt the predecessor still had in flight may then be sent twice, with the same webhook-id.
      await exec(pool, "UPDATE webhook_deliveries SET lease_until = NULL WHERE lease_until IS NOT NULL AND status = 'pending'")
    },
    nextDue: async () => (await one<{ at: number | null }>(pool, "SELECT MIN(next_attempt_at) AS at FROM webhook_deliveries WHERE status = 'pending'"))!.at,
    settle: (o) =>
      storage.tx(async (c): Promise<SettleResult> => {
        const { delivery: d, webhook: w, now } = o
        let status: string
        let scheduleIndex = d.schedule_index
        let nextAttemptAt: number | null = null
        // The endpoint's row first, in every path: a disable (which fails the endpoint's pending deliveries)
        // and a settle then take their locks in one order, endpoint before delivery, and never deadlock.
        const stillEnabled = (await getAny(c, w.id, true))?.enabled === true
        if (o.kind === 'succeeded') status = 'succeeded'
        else if (o.kind === 'gone') status = 'failed'
        else {
          // Another attempt of this endpoint may have disabled it meanwhile: then there is no next try.
          const delay = stillEnabled ? o.retryDelay() : undefined
          status = delay === undefined ? 'failed' : 'pending'
          scheduleIndex = d.schedule_index + 1
          nextAttemptAt = delay === undefined ? null : now + delay
        }
        if ((await exec(c, SETTLE, [d.id, d.attempts, status, scheduleIndex, nextAttemptAt, o.lastStatus, now])) === 0) return { settled: false }
        const a: AttemptRow = o.attempt
        await exec(c, INSERT_ATTEMPT, [a.id, a.delivery_id, a.webhook_id, a.org_id, a.attempt, a.request_headers, a.request_body, a.response_status, a.response_body, a.error, a.latency_ms, a.created_at])
        if (o.kind === 'succeeded') {
          await exec(c, 'UPDATE webhooks SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL', [w.id])
          return { settled: true }
        }
        if (o.kind === 'gone') {
          const reason = 'the endpoint answered 410 Gone'
          return (await disable(c, w, reason, now)) ? { settled: true, disabled: reason } : { settled: true }
        }
        if (!stillEnabled) return { settled: true }
        const since = (await one<{ failing_since: number }>(c, 'UPDATE webhooks SET failing_since = COALESCE(failing_since, $1) WHERE id = $2 RETURNING failing_since', [now, w.id]))?.failing_since ?? now
        if (now - since < o.disableAfterMs) return { settled: true }
        const reason = 'every delivery failed for 5 days'
        return (await disable(c, w, reason, now)) ? { settled: true, disabled: reason } : { settled: true }
      }),
    disable: (w, reason, now) => storage.tx((c) => disable(c, w, reason, now)),

    getDelivery: async (orgId, id) => (await one<DeliveryRow>(pool, 'SELECT * FROM webhook_deliveries WHERE org_id = $1 AND id = $2', [orgId, id])) ?? null,
    deliveries: (orgId, webhookId, before, limit) =>
      many<DeliveryRow>(pool, 'SELECT * FROM webhook_deliveries WHERE org_id = $1 AND webhook_id = $2 AND id < $3 ORDER BY id DESC LIMIT $4', [orgId, webhookId, before, limit]),
    attemptsOf: (ids) => many<AttemptRow>(pool, 'SELECT * FROM webhook_attempts WHERE delivery_id = ANY($1::text[]) ORDER BY delivery_id, attempt', [ids]),
    redeliver: (orgId, id, now, audit) =>
      audited(() => audit, async (c) => (await exec(c, `UPDATE webhook_deliveries SET ${REDELIVER_SET} WHERE org_id = $2 AND id = $3 AND lease_until IS NULL`, [now, orgId, id])) > 0),
    redeliverFailed: (orgId, webhookId, from, to, now, audit) =>
      audited(audit, (c) =>
        exec(c, `UPDATE webhook_deliveries SET ${REDELIVER_SET} WHERE org_id = $2 AND webhook_id = $3 AND status = 'failed' AND created_at >= $4 AND created_at < $5`, [
          now, orgId, webhookId, from, to,
        ]),
      ),
    deliveryOrg: async (id) => (await one<{ org_id: string }>(pool, 'SELECT org_id FROM webhook_deliveries WHERE id = $1', [id]))?.org_id ?? null,
    purge: async (before) => {
      let n = 0
      const slices = [
        "DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries WHERE created_at < $1 AND status <> 'pending' LIMIT 5000)",
        'DELETE FROM webhook_attempts WHERE id IN (SELECT id FROM webhook_attempts WHERE created_at < $1 LIMIT 5000)',
      ]
      for (const text of slices) {
        for (;;) {
          const c = await exec(pool, text, [before])
          n += c
          if (c < 5000) break
        }
      }
      return n
    },
  }
}
