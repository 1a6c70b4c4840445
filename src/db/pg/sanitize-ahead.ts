/**
 * The PostgreSQL side of sanitizing on any node (src/worker/sanitize-anywhere.ts, issue 38.2): the raw
 * reports queued past the processing node's next ones, taken `FOR UPDATE SKIP LOCKED` so two nodes never
 * sanitize one report and never wait on each other, and the position in the queue to start from.
 * Leases compare the database's clock (db-clock.ts `nowOr`).
 */
import type { QueuedRaw, TxSanitizeAheadSide } from '../../modules/feedback/processing-repo'
import { nowOr } from './db-clock'
import { many, type PgStorage } from './storage'
import type { PgTx } from './transaction'

export function createPgSanitizeAhead(storage: PgStorage): TxSanitizeAheadSide<PgTx> {
  const { pool } = storage
  // $1 after this job id, $2 at most, $3 the caller's now (NULL: the database's).
  const CLAIM = `SELECT j.id AS job_id, f.id, f.org_id, f.app_id, f.status, f.version, f.text, f.url, f.user_agent, f.console_logs, f.metadata,
      f.component_target, f.email, f.submitter_name, f.external_user_id, f.duplicate_of_id, f.redactions
    FROM jobs j JOIN feedback f ON f.id = j.feedback_id
    WHERE j.kind = 'process' AND j.id > $1 AND (j.lease_until IS NULL OR j.lease_until < ${nowOr('$3')})
      AND f.status = 'received' AND f.duplicate_of_id IS NULL AND f.redactions IS NULL
    ORDER BY j.id LIMIT $2 FOR UPDATE OF f SKIP LOCKED`
  const callerNow = (now: number): number | null => (storage.callerClock ? now : null)
  return {
    async headEnd(gap: number): Promise<number | null> {
      // The gap's last job and the first one past it, in one read; with a queue no longer than the gap, nothing is past it.
      const rows = await many<{ id: number }>(pool, "SELECT id FROM jobs WHERE kind = 'process' ORDER BY id OFFSET $1 LIMIT 2", [Math.max(0, gap - 1)])
      if (gap === 0) return rows.length > 0 ? 0 : null
      return rows.length === 2 ? Number(rows[0].id) : null
    },
    claimRaw: async (tx: PgTx, afterJobId: number, limit: number, now: number): Promise<QueuedRaw[]> =>
      (await many<QueuedRaw>(tx.client, CLAIM, [afterJobId, limit, callerNow(now)])).map((r) => ({ ...r, job_id: Number(r.job_id) })),
  }
}
