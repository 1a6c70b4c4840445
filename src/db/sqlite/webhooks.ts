/** SQLite side of modules/webhooks/repo.ts: the statements as they were, each change one IMMEDIATE transaction. */
import type { Statement } from 'bun:sqlite'
import type { Clock } from '../../core/clock'
import { eventBody, type EventRow } from '../../modules/events/repo'
import type { AttemptRow, DeliveryRow, SettleResult, WebhookRow, WebhooksRepo } from '../../modules/webhooks/repo'
import { sqliteAudited } from './audit-writer'
import { createOutbox, LAST_SEQ_SQL } from './outbox'
import { WEBHOOK_PASS_SQL } from '../sql/webhooks'
import { liveCountSql } from '../sql/org-caps'
import type { SqliteStorage } from './storage'

type RawWebhook = Omit<WebhookRow, 'enabled'> & { enabled: number }
const webhookOf = (r: RawWebhook | null): WebhookRow | null => (r ? { ...r, enabled: r.enabled === 1 } : null)

export function createSqliteWebhooksRepo({ sqlite }: SqliteStorage, clock: Clock): WebhooksRepo {
  const q = (sql: string): Statement => sqlite.query(sql)
  const outbox = createOutbox(sqlite, clock)
  const s = {
    insert: q(`INSERT INTO webhooks (id, org_id, app_id, url, event_types, secret_sealed, cursor_seq, enabled, created_at)
               VALUES ($id, $orgId, $appId, $url, $eventTypes, $secretSealed, $cursorSeq, 1, $createdAt)`),
    lastSeq: q(LAST_SEQ_SQL),
    liveCount: q(liveCountSql('webhooks', '?')),
    get: q('SELECT * FROM webhooks WHERE org_id = ? AND id = ? AND deleted_at IS NULL'),
    getAny: q('SELECT * FROM webhooks WHERE id = ? AND deleted_at IS NULL'),
    list: q('SELECT * FROM webhooks WHERE org_id = ? AND deleted_at IS NULL ORDER BY id'),
    behind: q(WEBHOOK_PASS_SQL.behind),
    behindInOrg: q(WEBHOOK_PASS_SQL.behindInOrg('?1')),
    softDelete: q('UPDATE webhooks SET deleted_at = ? WHERE org_id = ? AND id = ? AND deleted_at IS NULL'),
    dropPending: q("UPDATE webhook_deliveries SET status = 'failed', lease_until = NULL, next_attempt_at = NULL, updated_at = ? WHERE webhook_id = ? AND status = 'pending'"),
    rotate: q('UPDATE webhooks SET previous_secret_sealed = secret_sealed, previous_secret_until = ?, secret_sealed = ? WHERE org_id = ? AND id = ? AND deleted_at IS NULL'),
    advance: q('UPDATE webhooks SET cursor_seq = ? WHERE id = ? AND cursor_seq = ?'),
    disable: q('UPDATE webhooks SET enabled = 0, disabled_reason = ? WHERE id = ? AND enabled = 1'),
    // The cursor stays where the endpoint stopped: it catches up on what was committed meanwhile (docs/events.md).
    enable: q('UPDATE webhooks SET enabled = 1, disabled_reason = NULL, failing_since = NULL WHERE org_id = ? AND id = ? AND deleted_at IS NULL'),
    failing: q('UPDATE webhooks SET failing_since = COALESCE(failing_since, ?) WHERE id = ? RETURNING failing_since'),
    healthy: q('UPDATE webhooks SET failing_since = NULL WHERE id = ? AND failing_since IS NOT NULL'),
    eventsAfter: q('SELECT * FROM events WHERE org_id = ? AND seq > ? ORDER BY seq LIMIT ?'),
    insertDelivery: q(`INSERT OR IGNORE INTO webhook_deliveries (id, webhook_id, org_id, event_id, event_seq, event_type, payload, status, next_attempt_at, created_at, updated_at)
                       VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?)`),
    // In order per endpoint: at most one attempt in flight for an endpoint (a live lease), and its next
    // one is the due delivery of the lowest seq (unique per endpoint: one Org's seq). One row per endpoint,
    // so `limit` spreads over endpoints; none of an Org at its share of the pool ($full). INDEXED BY:
    // without ANALYZE figures the planner would take the due index and sort every due row of the endpoint
    // on each claim. The LIMIT ends the scan at the first endpoints with a due delivery: a claim costs the
    // same with 10 or 1,000 endpoints.
    claim: q(`UPDATE webhook_deliveries SET lease_until = $leaseUntil
              WHERE id IN (SELECT next_id FROM
                             (SELECT (SELECT d.id FROM webhook_deliveries d INDEXED BY webhook_deliveries_endpoint_idx
                                      WHERE d.webhook_id = w.id AND d.status = 'pending' AND d.next_attempt_at <= $now
                                        AND d.id NOT IN (SELECT value FROM json_each($busy))
                                      ORDER BY d.event_seq LIMIT 1) AS next_id
                              FROM webhooks w
                              WHERE w.enabled = 1 AND w.deleted_at IS NULL
                                AND w.org_id NOT IN (SELECT value FROM json_each($full))
                                AND NOT EXISTS (SELECT 1 FROM webhook_deliveries b INDEXED BY webhook_deliveries_leased_idx
                                                WHERE b.webhook_id = w.id AND b.lease_until IS NOT NULL AND b.lease_until >= $now AND b.status = 'pending'))
                           WHERE next_id IS NOT NULL LIMIT $limit)
              RETURNING *`),
    // A read before the claim: an UPDATE takes the write lock even when nothing is due (db/sqlite/write-turns.ts).
    anyDue: q("SELECT 1 FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= ? LIMIT 1"),
    releaseLeases: q('UPDATE webhook_deliveries SET lease_until = NULL WHERE lease_until IS NOT NULL'),
    nextDue: q("SELECT MIN(next_attempt_at) AS at FROM webhook_deliveries WHERE status = 'pending'"),
    // Compare-and-set on the attempt count: an attempt is settled once, whoever else tries.
    settle: q(`UPDATE webhook_deliveries SET status = $status, attempts = attempts + 1, schedule_index = $scheduleIndex, next_attempt_at = $nextAttemptAt,
               lease_until = NULL, last_status = $lastStatus, updated_at = $now WHERE id = $id AND attempts = $attempts`),
    insertAttempt: q(`INSERT INTO webhook_attempts (id, delivery_id, webhook_id, org_id, attempt, request_headers, request_body, response_status, response_body, error, latency_ms, created_at)
                      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    getDelivery: q('SELECT * FROM webhook_deliveries WHERE org_id = ? AND id = ?'),
    deliveries: q('SELECT * FROM webhook_deliveries WHERE org_id = ? AND webhook_id = ? AND id < ? ORDER BY id DESC LIMIT ?'),
    attemptsOf: q('SELECT * FROM webhook_attempts WHERE delivery_id IN (SELECT value FROM json_each(?)) ORDER BY delivery_id, attempt'),
    redeliver: q(`UPDATE webhook_deliveries SET status = 'pending', schedule_index = 0, next_attempt_at = ?, lease_until = NULL, updated_at = ?
                  WHERE org_id = ? AND id = ? AND lease_until IS NULL`),
    redeliverFailed: q(`UPDATE webhook_deliveries SET status = 'pending', schedule_index = 0, next_attempt_at = ?, lease_until = NULL, updated_at = ?
                        WHERE org_id = ? AND webhook_id = ? AND status = 'failed' AND created_at >= ? AND created_at < ?`),
    purgeDeliveries: q("DELETE FROM webhook_deliveries WHERE rowid IN (SELECT rowid FROM webhook_deliveries WHERE created_at < ? AND status != 'pending' LIMIT 5000)"),
    appInOrg: q('SELECT 1 FROM apps WHERE org_id = ? AND id = ? AND deleted_at IS NULL'),
    orgExists: q('SELECT 1 FROM orgs WHERE id = ?'),
    deliveryOrg: q('SELECT org_id FROM webhook_deliveries WHERE id = ?'),
    purgeAttempts: q('DELETE FROM webhook_attempts WHERE rowid IN (SELECT rowid FROM webhook_attempts WHERE created_at < ? LIMIT 5000)'),
  }
  const lastSeq = (orgId: string) => (s.lastSeq.get(orgId) as { last_seq: number }).last_seq
  const getAny = (id: string) => webhookOf(s.getAny.get(id) as RawWebhook | null)
  const audited = sqliteAudited(sqlite, clock)
  const disable = (w: Pick<WebhookRow, 'id' | 'org_id' | 'app_id'>, reason: string, now: number): boolean => {
    if (s.disable.run(reason, w.id).changes === 0) return false
    s.dropPending.run(now, w.id)
    outbox.append({ orgId: w.org_id, appId: w.app_id, type: 'webhook.disabled', data: { webhookId: w.id, reason } })
    return true
  }

  return {
    get: async (orgId, id) => webhookOf(s.get.get(orgId, id) as RawWebhook | null),
    getAny: async (id) => getAny(id),
    list: async (orgId) => (s.list.all(orgId) as RawWebhook[]).map((r) => webhookOf(r)!),
    behind: async () => (s.behind.all() as RawWebhook[]).map((r) => webhookOf(r)!),
    behindInOrg: async (orgId) => (s.behindInOrg.all(orgId) as RawWebhook[]).map((r) => webhookOf(r)!),
    appInOrg: async (orgId, appId) => !!s.appInOrg.get(orgId, appId),
    orgExists: async (orgId) => !!s.orgExists.get(orgId),

    insert: async (row, audit, max = 0) =>
      audited(
        () => audit,
        () => {
          if (max > 0 && (s.liveCount.get(row.orgId) as { n: number }).n >= max) return false
          s.insert.run({ ...row, cursorSeq: lastSeq(row.orgId) })
          return true
        },
      ),
    delete: async (orgId, id, now, audit) =>
      audited(
        () => audit,
        () => {
          if (s.softDelete.run(now, orgId, id).changes === 0) return false
          s.dropPending.run(now, id)
          return true
        },
      ),
    rotate: async (orgId, id, sealed, until, audit) => audited(() => audit, () => s.rotate.run(until, sealed, orgId, id).changes > 0),
    appendTest: async (w, audit) => audited(audit, () => outbox.append({ orgId: w.org_id, appId: w.app_id, type: 'webhook.test', data: { webhookId: w.id } })),
    enable: async (orgId, id, audit) => audited(() => audit, () => s.enable.run(orgId, id).changes > 0),

    fanOutPage: async (orgId, webhookId, limit, matches, newId, now) =>
      sqlite
        .transaction(() => {
          const fresh = getAny(webhookId)
          if (!fresh || !fresh.enabled) return 0
          const rows = s.eventsAfter.all(orgId, fresh.cursor_seq, limit) as EventRow[]
          if (rows.length === 0) return 0
          for (const e of rows) {
            if (matches(fresh, e)) s.insertDelivery.run(newId(), webhookId, orgId, e.id, e.seq, e.type, eventBody(e), now, now, now)
          }
          s.advance.run(rows[rows.length - 1].seq, webhookId, fresh.cursor_seq)
          return rows.length
        })
        .immediate(),
    claim: async (now, leaseUntil, limit, busy, fullOrgs) =>
      s.anyDue.get(now) === null
        ? []
        : sqlite.transaction(() => s.claim.all({ now, leaseUntil, limit, busy: JSON.stringify(busy), full: JSON.stringify(fullOrgs) }) as DeliveryRow[]).immediate(),
    releaseLeases: async () => void s.releaseLeases.run(),
    nextDue: async () => (s.nextDue.get() as { at: number | null }).at,
    settle: async (o) =>
      sqlite
        .transaction((): SettleResult => {
          const { delivery: d, webhook: w, now } = o
          let status: string
          let scheduleIndex = d.schedule_index
          let nextAttemptAt: number | null = null
          let stillEnabled = true
          if (o.kind === 'succeeded') status = 'succeeded'
          else if (o.kind === 'gone') status = 'failed'
          else {
            // Another attempt of this endpoint may have disabled it meanwhile: then there is no next try.
            stillEnabled = getAny(w.id)?.enabled === true
            const delay = stillEnabled ? o.retryDelay() : undefined
            status = delay === undefined ? 'failed' : 'pending'
            scheduleIndex = d.schedule_index + 1
            nextAttemptAt = delay === undefined ? null : now + delay
          }
          const won = s.settle.run({ id: d.id, attempts: d.attempts, status, scheduleIndex, nextAttemptAt, lastStatus: o.lastStatus, now }).changes > 0
          if (!won) return { settled: false }
          const a: AttemptRow = o.attempt
          s.insertAttempt.run(a.id, a.delivery_id, a.webhook_id, a.org_id, a.attempt, a.request_headers, a.request_body, a.response_status, a.response_body, a.error, a.latency_ms, a.created_at)
          if (o.kind === 'succeeded') {
            s.healthy.run(w.id)
            return { settled: true }
          }
          if (o.kind === 'gone') {
            const reason = 'the endpoint answered 410 Gone'
            return disable(w, reason, now) ? { settled: true, disabled: reason } : { settled: true }
          }
          if (!stillEnabled) return { settled: true }
          const since = (s.failing.get(now, w.id) as { failing_since: number } | null)?.failing_since ?? now
          if (now - since < o.disableAfterMs) return { settled: true }
          const reason = 'every delivery failed for 5 days'
          return disable(w, reason, now) ? { settled: true, disabled: reason } : { settled: true }
        })
        .immediate(),
    disable: async (w, reason, now) => sqlite.transaction(() => disable(w, reason, now)).immediate(),

    getDelivery: async (orgId, id) => s.getDelivery.get(orgId, id) as DeliveryRow | null,
    deliveries: async (orgId, webhookId, before, limit) => s.deliveries.all(orgId, webhookId, before, limit) as DeliveryRow[],
    attemptsOf: async (ids) => s.attemptsOf.all(JSON.stringify(ids)) as AttemptRow[],
    redeliver: async (orgId, id, now, audit) => audited(() => audit, () => s.redeliver.run(now, now, orgId, id).changes > 0),
    redeliverFailed: async (orgId, webhookId, from, to, now, audit) => audited(audit, () => s.redeliverFailed.run(now, now, orgId, webhookId, from, to).changes),
    deliveryOrg: async (id) => (s.deliveryOrg.get(id) as { org_id: string } | null)?.org_id ?? null,
    purge: async (before) => {
      let n = 0
      for (const st of [s.purgeDeliveries, s.purgeAttempts]) {
        for (;;) {
          // A transaction per slice: it takes its write turn ahead of the processing thread (db/sqlite/write-turns.ts).
          const c = sqlite.transaction(() => st.run(before).changes).immediate()
          n += c
          if (c < 5000) break
        }
      }
      return n
    },
  }
}
