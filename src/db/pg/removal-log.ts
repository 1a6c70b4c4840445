/**
 * The removal log (table removed_reports, cluster mode): the ids of the reports every committed removal (a
 * reporter's erasure, the report retention) took away, numbered 1, 2, 3… in the order the removals
 * committed. Each node reads the rows past its cursor and drops those reports from its similarity indexes
 * and text cache (src/nodes/removal-follower.ts): the index lives in each node's memory, and only the
 * removing node's own was told before (an erased report's text stayed in the others' until a restart).
 *
 * Why numbered in commit order and how: a reader that read up to n must never find a row below n later.
 * With a sequence, a removal that took its numbers first could commit last, and a reader that had moved
 * past its numbers would skip it for good. So a removal takes the log's lock (a transaction-scoped advisory
 * lock, removals only) as its last step and numbers its rows from the log's highest: the next removal waits
 * for this one's commit, then sees its rows. Removals are rare and the lock is held only for the insert and
 * the commit, after every row lock of the removal (nothing a removal waits for can wait for the log's lock).
 *
 * Rows are kept LOG_KEEP_MS (an hour); each removal, after logging its own rows, deletes up to PRUNE_MAX of
 * the oldest expired ones (by the key: PRUNE_SQL): its own are the newest, so the numbers go on from them.
 * A reader whose cursor fell behind what was pruned sees the gap (rows are numbered without holes) and
 * drops its indexes whole.
 */
import { DB_NOW } from './db-clock'
import { many, type PgQueryable } from './storage'

export const LOG_KEEP_MS = 60 * 60_000
const PRUNE_MAX = 10_000

/** In the removal's transaction, after its deletes: logs `ids` (the reports it removed) and prunes. */
export async function logRemoved(client: PgQueryable, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return
  await client.query("SELECT pg_advisory_xact_lock(hashtextextended('fixloop.removal-log', 0))")
  await client.query(
    `INSERT INTO removed_reports (seq, feedback_id, removed_at)
     SELECT (SELECT COALESCE(MAX(seq), 0) FROM removed_reports) + x.n, x.id, ${DB_NOW} FROM unnest($1::text[]) WITH ORDINALITY AS x(id, n)`,
    [ids],
  )
  await client.query(PRUNE_SQL, [LOG_KEEP_MS])
}

/**
 * The prune: of the oldest PRUNE_MAX rows (the key's index), those past LOG_KEEP_MS ($1). The ids as an
 * array, so the delete goes by the key too: written `seq IN (…) AND removed_at < …`, PostgreSQL read the
 * whole log for it (a sequential scan with the age as filter, the oldest rows hashed), at every removal,
 * under the log's lock: 116 ms of a 200,000-row log (a retention sweep of the hour), held at each batch of
 * 200 and by every other removal of the cluster waiting for the lock. ~10 ms so.
 */
export const PRUNE_SQL = `DELETE FROM removed_reports WHERE seq = ANY(ARRAY(
  SELECT seq FROM (SELECT seq, removed_at FROM removed_reports ORDER BY seq LIMIT ${PRUNE_MAX}) oldest WHERE removed_at < ${DB_NOW} - $1))`

/** Up to `limit` rows past `after`, in order. */
export async function removedSince(q: PgQueryable, after: number, limit: number): Promise<{ seq: number; id: string }[]> {
  const rows = await many<{ seq: string | number; id: string }>(q, 'SELECT seq, feedback_id AS id FROM removed_reports WHERE seq > $1 ORDER BY seq LIMIT $2', [after, limit])
  return rows.map((r) => ({ seq: Number(r.seq), id: r.id }))
}

/**
 * The highest number in the log (0 when empty). Never lower than before in a running cluster: a prune
 * keeps the removal's own rows, the newest; lower only when the log was reset (a restore of an older
 * database, the table emptied by hand).
 */
export async function lastRemovedSeq(q: PgQueryable): Promise<number> {
  const rows = await many<{ last: string | number }>(q, 'SELECT COALESCE(MAX(seq), 0) AS last FROM removed_reports')
  return Number(rows[0]?.last ?? 0)
}
