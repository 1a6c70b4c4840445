/**
 * The processing engine's batch write on PostgreSQL (src/worker/steps/process-feedback-pg.ts `runBatch`):
 * what one report at a time writes in ~15 statements (src/db/bodies/lifecycle.ts moves, the clustering
 * writes of src/dedup/steps.ts, the job's deletion), written for a whole batch with one statement per
 * kind of write. The caller decides every row's new status, version bump, cluster columns and events
 * with the same rules as the one-at-a-time path (lifecycle/rules.ts, dedup/steps.ts); this file only
 * turns them into SQL. It lives beside the lifecycle because it writes `feedback.status` and inserts jobs
 * (test/architecture.test.ts: nothing else may).
 */
import type { BatchLockedRow, LeasedJob, ProcessedBatch } from '../../modules/feedback/processing-repo'
import { LeaseLost } from '../../lifecycle/jobs-repo'
import type { Clock } from '../../core/clock'
import type { OutboxEvent } from '../../lifecycle/event-types'
import type { WakeSignal } from '../../lifecycle/wake'
import { appendEventsAcrossOrgs } from './outbox'
import { exec, many, prepared } from './storage'
import type { PgTx } from './transaction'

const LOCK = `SELECT id, org_id, app_id, status, version, duplicate_of_id, merge_locked::int AS merge_locked, spam_marked_at,
    EXISTS (SELECT 1 FROM feedback d WHERE d.duplicate_of_id = f.id) AS has_duplicates
  FROM feedback f WHERE id = ANY($1::text[]) ORDER BY id COLLATE "C" FOR UPDATE`

// Each report's new row in one statement. A report sanitized here gets its scrubbed columns (as
// moveToSanitized writes them); one that leaves `received` here (clustered: a report only scrubbed ahead
// stays `received`) its processed_at, unless it has one; an automatic duplicate its link, merge score and its
// lead's merge request URL, with its own summary and suggestion cleared (as setDuplicate); a lead its
// suggestion (as setSuggestion). failure_reason is cleared by any status move, as decideMove does.
const WRITE_ROWS = `UPDATE feedback f SET
    status = u.status, version = f.version + u.bump, updated_at = $19,
    processed_at = CASE WHEN u.status <> 'received' THEN COALESCE(f.processed_at, $19) ELSE f.processed_at END,
    failure_reason = CASE WHEN u.status <> f.status THEN NULL ELSE f.failure_reason END,
    text = CASE WHEN u.sanitize THEN u.text ELSE f.text END,
    url = CASE WHEN u.sanitize THEN u.url ELSE f.url END,
    user_agent = CASE WHEN u.sanitize THEN u.user_agent ELSE f.user_agent END,
    console_logs = CASE WHEN u.sanitize THEN u.console_logs ELSE f.console_logs END,
    metadata = CASE WHEN u.sanitize THEN u.metadata ELSE f.metadata END,
    component_target = CASE WHEN u.sanitize THEN u.component_target ELSE f.component_target END,
    redactions = CASE WHEN u.sanitize THEN u.redactions ELSE f.redactions END,
    duplicate_of_id = COALESCE(u.lead, f.duplicate_of_id),
    merge_locked = CASE WHEN u.lead IS NULL THEN f.merge_locked ELSE FALSE END,
    merge_score = CASE WHEN u.lead IS NULL THEN f.merge_score ELSE u.merge_score END,
    merge_reason = CASE WHEN u.lead IS NULL THEN f.merge_reason ELSE u.merge_reason END,
    merge_request_url = CASE WHEN u.lead IS NULL THEN f.merge_request_url ELSE (SELECT l.merge_request_url FROM feedback l WHERE l.id = u.lead) END,
    suggested_lead_id = CASE WHEN u.lead IS NOT NULL THEN NULL WHEN u.sug_lead IS NOT NULL THEN u.sug_lead ELSE f.suggested_lead_id END,
    suggested_score = CASE WHEN u.lead IS NOT NULL THEN NULL WHEN u.sug_lead IS NOT NULL THEN u.sug_score ELSE f.suggested_score END,
    suggested_reason = CASE WHEN u.lead IS NOT NULL THEN NULL WHEN u.sug_lead IS NOT NULL THEN u.sug_reason ELSE f.suggested_reason END,
    theme = CASE WHEN u.lead IS NULL THEN f.theme ELSE NULL END,
    consolidated_text = CASE WHEN u.lead IS NULL THEN f.consolidated_text ELSE NULL END,
    duplicate_count = CASE WHEN u.lead IS NULL THEN f.duplicate_count ELSE 0 END,
    last_duplicate_at = CASE WHEN u.lead IS NULL THEN f.last_duplicate_at ELSE NULL END
  FROM unnest($1::text[], $2::int[], $3::text[], $4::int[], $5::boolean[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[],
    $12::text[], $13::text[], $14::float8[], $15::text[], $16::text[], $17::float8[], $18::text[])
    AS u(id, version, status, bump, sanitize, text, url, user_agent, console_logs, metadata, component_target,
      redactions, lead, merge_score, merge_reason, sug_lead, sug_score, sug_reason)
  WHERE f.id = u.id AND f.version = u.version`

/**
 * Deletes each job only while still leased to its claim's owner (a stalled node's batch is not written:
 * `finishJobsOf`). `j.id = ANY($1)` repeats the join on purpose: with the join alone, a backlog of ~20k jobs
 * was planned as a hash join over a sequential scan of every job, each batch (6.4 ms a batch of 256 instead
 * of 1.6; test/repos/processing-batch.test.ts holds the plan).
 */
export const FINISH_JOBS = `DELETE FROM jobs j USING unnest($1::bigint[], $2::text[]) AS d(id, owner)
  WHERE j.id = ANY($1::bigint[]) AND j.id = d.id AND j.lease_owner IS NOT DISTINCT FROM d.owner`
const QUEUE_AGENT_RUNS = `INSERT INTO jobs (kind, feedback_id, app_id, run_after, created_at) SELECT 'agent', f, NULL, $2::bigint, $2::bigint FROM unnest($1::text[]) AS f`

/**
 * Deletes processing jobs in the caller's transaction, each only while its lease is still the one it was
 * claimed with; LeaseLost (the transaction rolls back) when any is not. A node that stalled past its lease
 * (SIGSTOP, a frozen VM) had its leases freed by the sweep and its partitions taken: what it planned before
 * the stall comes from an index another node's may have moved past, and must not be written.
 */
export async function finishJobsOf(tx: PgTx, jobs: readonly LeasedJob[]): Promise<void> {
  if (jobs.length === 0) return
  const done = await exec(tx.client, FINISH_JOBS, [jobs.map((j) => j.id), jobs.map((j) => j.lease_owner)])
  if (done !== jobs.length) throw new LeaseLost(jobs.map((j) => j.id))
}

export function createPgProcessedBatch(clock: Clock, wake?: WakeSignal) {
  return {
    async lock(tx: PgTx, ids: string[]): Promise<Map<string, BatchLockedRow>> {
      const out = new Map<string, BatchLockedRow>()
      if (ids.length > 0) for (const r of await many<BatchLockedRow>(tx.client, LOCK, [ids])) out.set(r.id, r)
      return out
    },

    async write(tx: PgTx, batch: ProcessedBatch): Promise<number> {
      const rows = batch.reports
      const col = <T>(f: (r: (typeof rows)[number]) => T) => rows.map(f)
      const written =
        rows.length === 0
          ? 0
          : (
              await tx.client.query(
                prepared(WRITE_ROWS, [
                  col((r) => r.id), col((r) => r.version), col((r) => r.status), col((r) => r.bump), col((r) => r.sanitized !== null),
                  col((r) => r.sanitized?.columns.text ?? null), col((r) => r.sanitized?.columns.url ?? null), col((r) => r.sanitized?.columns.userAgent ?? null),
                  col((r) => r.sanitized?.columns.consoleLogs ?? null), col((r) => r.sanitized?.columns.metadata ?? null), col((r) => r.sanitized?.columns.componentTarget ?? null),
                  col((r) => r.sanitized?.redactions ?? null),
                  col((r) => r.duplicate?.leadId ?? null), col((r) => r.duplicate?.score ?? null), col((r) => r.duplicate?.reason ?? null),
                  col((r) => r.suggestion?.leadId ?? null), col((r) => r.suggestion?.score ?? null), col((r) => r.suggestion?.reason ?? null),
                  batch.now,
                ]),
              )
            ).rowCount ?? 0
      await finishJobsOf(tx, batch.jobsDone)
      if (batch.agentRuns.length > 0) {
        await exec(tx.client, QUEUE_AGENT_RUNS, [batch.agentRuns, clock.now()])
        tx.onCommit(() => wake?.raise('agent'))
      }
      return written
    },

    appendEvents: (tx: PgTx, events: OutboxEvent[]): Promise<void> => appendEventsAcrossOrgs(tx.client, clock, events),
  }
}
