/**
 * SQL of webhook endpoints, deliveries and attempts. Every read a caller can name takes the Org, so a
 * cross-Org id simply finds nothing.
 */
import type { Database, Statement } from 'bun:sqlite'

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
  enabled: number
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

export function createWebhooksRepo(sqlite: Database) {
  const q = (sql: string): Statement => sqlite.query(sql)
  const s = {
    insert: q(`INSERT INTO webhooks (id, org_id, app_id, url, event_types, secret_sealed, cursor_seq, enabled, created_at)
               VALUES ($id, $orgId, $appId, $url, $eventTypes, $secretSealed, $cursorSeq, 1, $createdAt)`),
    get: q('SELECT * FROM webhooks WHERE org_id = ? AND id = ? AND deleted_at IS NULL'),
    getAny: q('SELECT * FROM webhooks WHERE id = ? AND deleted_at IS NULL'),
    list: q('SELECT * FROM webhooks WHERE org_id = ? AND deleted_at IS NULL ORDER BY id'),
    liveForOrg: q('SELECT * FROM webhooks WHERE org_id = ? AND deleted_at IS NULL AND enabled = 1'),
    liveOrgs: q('SELECT DISTINCT org_id FROM webhooks WHERE deleted_at IS NULL AND enabled = 1'),
    softDelete: q('UPDATE webhooks SET deleted_at = ? WHERE org_id = ? AND id = ? AND deleted_at IS NULL'),
    dropPending: q("UPDATE webhook_deliveries SET status = 'failed', lease_until = NULL, next_attempt_at = NULL, updated_at = ? WHERE webhook_id = ? AND status = 'pending'"),
    rotate: q('UPDATE webhooks SET previous_secret_sealed = secret_sealed, previous_secret_until = ?, secret_sealed = ? WHERE org_id = ? AND id = ?'),
    advance: q('UPDATE webhooks SET cursor_seq = ? WHERE id = ? AND cursor_seq = ?'),
    disable: q('UPDATE webhooks SET enabled = 0, disabled_reason = ? WHERE id = ? AND enabled = 1'),
    enable: q('UPDATE webhooks SET enabled = 1, disabled_reason = NULL, failing_since = NULL, cursor_seq = MAX(cursor_seq, ?) WHERE org_id = ? AND id = ?'),
    failing: q('UPDATE webhooks SET failing_since = COALESCE(failing_since, ?) WHERE id = ? RETURNING failing_since'),
    healthy: q('UPDATE webhooks SET failing_since = NULL WHERE id = ? AND failing_since IS NOT NULL'),
    eventsAfter: q('SELECT * FROM events WHERE org_id = ? AND seq > ? ORDER BY seq LIMIT ?'),
    insertDelivery: q(`INSERT OR IGNORE INTO webhook_deliveries (id, webhook_id, org_id, event_id, event_seq, event_type, payload, status, next_attempt_at, created_at, updated_at)
                       VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?)`),
    claim: q(`UPDATE webhook_deliveries SET lease_until = $leaseUntil
              WHERE id IN (SELECT d.id FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
                           WHERE d.status = 'pending' AND d.next_attempt_at <= $now AND (d.lease_until IS NULL OR d.lease_until < $now)
                             AND w.enabled = 1 AND w.deleted_at IS NULL
                             AND d.id NOT IN (SELECT value FROM json_each($busy))
                           ORDER BY d.next_attempt_at LIMIT $limit)
              RETURNING *`),
    // A read before the claim: an UPDATE takes the write lock even when nothing is due (db/write-turns.ts).
    anyDue: q("SELECT 1 FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= ? LIMIT 1"),
    releaseLeases: q('UPDATE webhook_deliveries SET lease_until = NULL WHERE lease_until IS NOT NULL'),
    nextDue: q("SELECT MIN(next_attempt_at) AS at FROM webhook_deliveries WHERE status = 'pending'"),
    settle: q(`UPDATE webhook_deliveries SET status = $status, attempts = attempts + 1, schedule_index = $scheduleIndex, next_attempt_at = $nextAttemptAt,
               lease_until = NULL, last_status = $lastStatus, updated_at = $now WHERE id = $id`),
    insertAttempt: q(`INSERT INTO webhook_attempts (id, delivery_id, webhook_id, org_id, attempt, request_headers, request_body, response_status, response_body, error, latency_ms, created_at)
                      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    getDelivery: q('SELECT * FROM webhook_deliveries WHERE org_id = ? AND id = ?'),
    deliveries: q('SELECT * FROM webhook_deliveries WHERE org_id = ? AND webhook_id = ? AND id < ? ORDER BY id DESC LIMIT ?'),
    attemptsOf: q('SELECT * FROM webhook_attempts WHERE delivery_id IN (SELECT value FROM json_each(?)) ORDER BY attempt'),
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

  return {
    sqlite,
    insert: (row: { id: string; orgId: string; appId: string | null; url: string; eventTypes: string; secretSealed: string; cursorSeq: number; createdAt: number }) => s.insert.run(row),
    get: (orgId: string, id: string) => s.get.get(orgId, id) as WebhookRow | null,
    getAny: (id: string) => s.getAny.get(id) as WebhookRow | null,
    list: (orgId: string) => s.list.all(orgId) as WebhookRow[],
    liveForOrg: (orgId: string) => s.liveForOrg.all(orgId) as WebhookRow[],
    liveOrgs: () => (s.liveOrgs.all() as { org_id: string }[]).map((r) => r.org_id),
    softDelete: (orgId: string, id: string, now: number) => s.softDelete.run(now, orgId, id).changes,
    dropPending: (webhookId: string, now: number) => s.dropPending.run(now, webhookId).changes,
    rotate: (orgId: string, id: string, sealed: string, previousUntil: number) => s.rotate.run(previousUntil, sealed, orgId, id).changes,
    advance: (id: string, to: number, from: number) => s.advance.run(to, id, from).changes,
    disable: (id: string, reason: string) => s.disable.run(reason, id).changes,
    enable: (orgId: string, id: string, cursor: number) => s.enable.run(cursor, orgId, id).changes,
    markFailing: (id: string, now: number) => (s.failing.get(now, id) as { failing_since: number } | null)?.failing_since ?? now,
    markHealthy: (id: string) => s.healthy.run(id),
    eventsAfter: (orgId: string, after: number, limit: number) =>
      s.eventsAfter.all(orgId, after, limit) as { id: string; seq: number; type: string; app_id: string | null; data: string; created_at: number; org_id: string }[],
    insertDelivery: (id: string, webhookId: string, orgId: string, eventId: string, seq: number, type: string, payload: string, now: number) =>
      s.insertDelivery.run(id, webhookId, orgId, eventId, seq, type, payload, now, now, now),
    claim: (now: number, leaseUntil: number, limit: number, busy: string[]) =>
      s.anyDue.get(now) === null ? [] : sqlite.transaction(() => s.claim.all({ now, leaseUntil, limit, busy: JSON.stringify(busy) }) as DeliveryRow[]).immediate(),
    releaseLeases: () => s.releaseLeases.run(),
    nextDue: () => (s.nextDue.get() as { at: number | null }).at,
    settle: (p: { id: string; status: string; scheduleIndex: number; nextAttemptAt: number | null; lastStatus: number | null; now: number }) => s.settle.run(p),
    insertAttempt: (a: AttemptRow) =>
      s.insertAttempt.run(a.id, a.delivery_id, a.webhook_id, a.org_id, a.attempt, a.request_headers, a.request_body, a.response_status, a.response_body, a.error, a.latency_ms, a.created_at),
    getDelivery: (orgId: string, id: string) => s.getDelivery.get(orgId, id) as DeliveryRow | null,
    deliveries: (orgId: string, webhookId: string, before: string, limit: number) => s.deliveries.all(orgId, webhookId, before, limit) as DeliveryRow[],
    attemptsOf: (deliveryIds: string[]) => s.attemptsOf.all(JSON.stringify(deliveryIds)) as AttemptRow[],
    redeliver: (orgId: string, id: string, now: number) => s.redeliver.run(now, now, orgId, id).changes,
    redeliverFailed: (orgId: string, webhookId: string, from: number, to: number, now: number) => s.redeliverFailed.run(now, now, orgId, webhookId, from, to).changes,
    appInOrg: (orgId: string, appId: string) => !!s.appInOrg.get(orgId, appId),
    orgExists: (orgId: string) => !!s.orgExists.get(orgId),
    /** The Org of a delivery, for the CLI (which has no Org key to scope by). */
    deliveryOrg: (id: string) => (s.deliveryOrg.get(id) as { org_id: string } | null)?.org_id ?? null,
    purge: (before: number) => {
      let n = 0
      for (const st of [s.purgeDeliveries, s.purgeAttempts]) {
        for (;;) {
          // A transaction per slice: it takes its write turn ahead of the processing thread (db/write-turns.ts).
          const c = sqlite.transaction(() => st.run(before).changes).immediate()
          n += c
          if (c < 5000) break
        }
      }
      return n
    },
  }
}
export type WebhooksRepo = ReturnType<typeof createWebhooksRepo>
