/**
 * Retention: events older than FIXLOOP_EVENT_RETENTION_DAYS (default 30) and webhook deliveries and
 * attempts older than FIXLOOP_WEBHOOK_LOG_RETENTION_DAYS (default 14) and audit entries older than
 * FIXLOOP_AUDIT_RETENTION_DAYS (default 0: kept forever) are deleted, in batches, once at start and then
 * every hour; so are dashboard sessions that ended more than a day ago (src/db/sql/dead-sessions.ts). Seq
 * never goes back (event_counters), so cursors stay valid.
 */
import type { Logger } from '../../core/logger'
import type { Store } from '../../db/store'
import type { Clock } from '../../core/clock'
import type { Config } from '../../config'
import { createAuditLog } from '../audit/index'
import { SESSION_IDLE_MS } from '../admins/sessions'

const DAY_MS = 24 * 3600_000
const EVERY_MS = 3600_000
/** How long an ended session stays (a day: nothing reads it, but a sign-out a moment ago is no reason to hurry). */
export const DEAD_SESSION_KEEP_MS = DAY_MS

/** What this service is given: the repositories and values it uses (a Context has them all). */
export interface RetentionDeps {
  store: Pick<Store, 'events' | 'webhooks' | 'audit' | 'admins'>
  clock: Clock
  config: Pick<Config, 'eventRetentionDays' | 'webhookLogRetentionDays' | 'auditRetentionDays'>
}

export async function purgeExpired(ctx: RetentionDeps): Promise<{ events: number; deliveryLog: number; audit: number; sessions: number }> {
  const now = ctx.clock.now()
  const events = await ctx.store.events.purgeBefore(now - ctx.config.eventRetentionDays * DAY_MS)
  const deliveryLog = await ctx.store.webhooks.purge(now - ctx.config.webhookLogRetentionDays * DAY_MS)
  const audit = await createAuditLog(ctx.store.audit, ctx.clock).purgeOlderThan(ctx.config.auditRetentionDays)
  const before = now - DEAD_SESSION_KEEP_MS
  const sessions = await ctx.store.admins.purgeDeadSessions(before, before - SESSION_IDLE_MS)
  return { events, deliveryLog, audit, sessions }
}

/**
 * Starts the hourly purge; returns the function that stops it. `mine`: in cluster mode only the node
 * holding the `maintenance` role purges (idempotent anyway: two purges delete the same rows once).
 */
export function startRetention(ctx: RetentionDeps, log: Logger, mine: () => boolean = () => true): () => void {
  const run = async () => {
    if (!mine()) return
    try {
      const n = await purgeExpired(ctx)
      if (n.events + n.deliveryLog + n.audit + n.sessions > 0) log.info('retention purge', n)
    } catch (e) {
      log.warn('retention purge failed; retried in an hour', { error: e instanceof Error ? e.message : String(e) })
    }
  }
  const first = setTimeout(() => void run(), 5_000)
  const timer = setInterval(() => void run(), EVERY_MS)
  return () => {
    clearTimeout(first)
    clearInterval(timer)
  }
}
