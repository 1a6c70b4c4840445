/**
 * A report's changes by hand, written once for both dialects (src/db/tx-body.ts): a customer's status
 * move (PATCH), "Mark as fixed" (the lead resolved, its duplicates following, the audit row) and a spam
 * decision. Each reads the report's row with `lockingRead` (PostgreSQL: `FOR UPDATE`, so a second move of
 * the report waits, then decides on the row the first one left; SQLite: the IMMEDIATE transaction's write
 * lock, so the processing thread cannot move the report in between) and moves it through the lifecycle's
 * bodies. The feedback repositories (src/db/sqlite/feedback.ts, src/db/pg/feedback.ts) run them.
 */
import type { Clock } from '../../core/clock'
import type { CustomerTarget, FeedbackStatus } from '../../core/fsm'
import type { AuditEntry } from '../../modules/audit/entry'
import { spamChangeVerdict, type CustomerMoveOutcome, type ResolvedByHand, type ResolveOutcome, type SpamChange, type SpamChangeOutcome } from '../../modules/feedback/repo'
import { get, lockingRead, run, sql, type Body } from '../tx-body'
import { writeAudit } from './audit'
import type { LifecycleBodies } from './lifecycle'
import { resolutionBodies } from './resolutions'

type ReportRow = { appId: string; status: FeedbackStatus; version: number; duplicateOfId: string | null; prUrl: string | null }
type SpamRow = { appId: string; status: string; duplicateOfId: string | null; duplicateCount: number; spamMarkedAt: number | null; spamReasons: string | null }

const REPORT = lockingRead(
  'SELECT app_id AS "appId", status, version, duplicate_of_id AS "duplicateOfId", merge_request_url AS "prUrl" FROM feedback WHERE org_id = ? AND id = ?',
)
const SPAM_STATE = lockingRead(
  `SELECT app_id AS "appId", status, duplicate_of_id AS "duplicateOfId", duplicate_count AS "duplicateCount", spam_marked_at AS "spamMarkedAt",
     spam_reasons AS "spamReasons" FROM feedback WHERE org_id = ? AND id = ?`,
)
const SET_SPAM = sql('UPDATE feedback SET spam_score = ?, spam_reasons = ?, spam_marked_at = ?, updated_at = ? WHERE id = ?')
const PROCESS_JOB = sql("SELECT 1 AS n FROM jobs WHERE kind = 'process' AND feedback_id = ?")

export function feedbackChangeBodies(lifecycle: LifecycleBodies, clock: Clock) {
  const resolutions = resolutionBodies(lifecycle)
  return {
    /** A customer's move: the lifecycle checks it (invalid_transition), clears an old failure on a retry and queues the run. */
    *customerMove(orgId: string, id: string, to: CustomerTarget): Body<CustomerMoveOutcome> {
      const row = yield* get<ReportRow>(REPORT, orgId, id)
      if (!row) return { kind: 'not_found' }
      if (row.duplicateOfId) return { kind: 'duplicate', leadId: row.duplicateOfId }
      return (yield* lifecycle.move(id, to, { by: 'customer', version: row.version })) ? { kind: 'moved' } : { kind: 'lost' }
    },

    /** "Mark as fixed": the lead resolved, what a merged pull request brings (resolutions.ts), and the audit row. */
    *resolveByHand(orgId: string, id: string, audit: (change: ResolvedByHand) => AuditEntry): Body<ResolveOutcome> {
      const row = yield* get<ReportRow>(REPORT, orgId, id)
      if (!row) return { kind: 'not_found' }
      if (row.duplicateOfId) return { kind: 'duplicate', leadId: row.duplicateOfId }
      if (!(yield* lifecycle.move(id, 'resolved', { by: 'person', version: row.version }))) return { kind: 'lost' }
      const change = { appId: row.appId, from: row.status, followed: yield* resolutions.followLead({ id, orgId, appId: row.appId, prUrl: row.prUrl }) }
      yield* writeAudit(clock, audit(change))
      return { kind: 'resolved', ...change }
    },

    /** A spam decision by hand; "not spam" on a report never processed gives it its `process` job (lifecycle `restoredFromSpam`). */
    *setSpam(orgId: string, id: string, change: SpamChange, now: number): Body<SpamChangeOutcome> {
      const row = yield* get<SpamRow>(SPAM_STATE, orgId, id)
      if (!row) return { kind: 'not_found' }
      const verdict = spamChangeVerdict(row, change)
      if (verdict !== 'apply') return verdict
      if (change.spam) yield* run(SET_SPAM, change.score, change.reasons, now, now, id)
      else {
        yield* run(SET_SPAM, null, null, null, now, id)
        if (row.status === 'received' && (yield* get(PROCESS_JOB, id)) === undefined) {
          yield* lifecycle.restoredFromSpam({ orgId, appId: row.appId, feedbackId: id }, change.emitEvent)
        }
      }
      return { kind: 'changed', appId: row.appId, status: row.status, reasons: row.spamReasons }
    },
  }
}
