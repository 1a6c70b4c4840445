/**
 * One uploaded object listed by several reports (a client may attach the same key again): the first report
 * to reference it owns it (`uploads.feedback_id`), the others are recorded in `upload_shares`. Both
 * dialects run these texts (src/db/{sqlite,pg}/{feedback,uploads,reporters,abuse}.ts), each with its own
 * placeholders, so the rule is written once:
 *
 * - a submission marks each key it references: owned if nobody owned it, else shared;
 * - removing reports (an erasure, the retention, the spam retention) first hands each object they own to
 *   the oldest surviving report that shares it, and only the objects nobody else lists are deleted;
 * - an object on its way out (detached by a removal, or retired by the collection of never-referenced
 *   uploads: no report and `created_at = 0`) is never attached again. A submission checked its keys before
 *   its transaction; one removed meanwhile fails the submission (400, upload again) instead of leaving a
 *   report that lists a deleted object. On PostgreSQL the submission locks its keys' rows and a removal
 *   locks its reports' rows before deciding, so one of them waits for the other.
 */

/** An upload row on its way out: no report, and `created_at` zeroed by the removal or the collection that retired it. */
const RETIRED = 'feedback_id IS NULL AND created_at = 0'

/** Of the keys (`key`: one placeholder, or PostgreSQL's `ANY(...)`), those that may still be attached. */
export const attachableSql = (key: string) => `SELECT key FROM uploads WHERE key = ${key} AND NOT (${RETIRED})`

/** The collection retires a never-referenced upload before removing its object; false when a report took it meanwhile. */
export const retireUnreferencedSql = (key: string) => `UPDATE uploads SET created_at = 0 WHERE key = ${key} AND feedback_id IS NULL`

/** The uploads the removed reports own (`ids` as in handOverSharedSql); PostgreSQL locks them first (FOR UPDATE). */
export const ownedByRemovedSql = (ids: string) => `SELECT key FROM uploads WHERE feedback_id IN ${ids}`

/** The submission's marks; `report` and `key` are the side's placeholders. Run in this order. */
export const markReferencedSql = (report: string, key: string) => [
  `UPDATE uploads SET feedback_id = ${report} WHERE key = ${key} AND feedback_id IS NULL`,
  // Owned by another report (the statement above changed nothing): this report shares it.
  `INSERT INTO upload_shares (key, feedback_id) SELECT key, ${report} FROM uploads WHERE key = ${key} AND feedback_id <> ${report}
   ON CONFLICT DO NOTHING`,
]

/**
 * Before the removed reports' uploads are listed for deletion (`ids`: the removed ids as a subquery, as
 * in src/db/sql/report-removal.ts): each object a removed report owns and a surviving one shares passes to
 * the oldest such survivor (which stays listed as a sharer too: harmless, it is skipped while it owns the
 * object), and the removed reports' shares go. What the removed reports still own afterwards is theirs alone.
 */
export const handOverSharedSql = (ids: string) => {
  const survivors = `FROM upload_shares s WHERE s.key = uploads.key AND s.feedback_id NOT IN ${ids}`
  return [
    `UPDATE uploads SET feedback_id = (SELECT MIN(s.feedback_id) ${survivors})
     WHERE feedback_id IN ${ids} AND EXISTS (SELECT 1 ${survivors})`,
    `DELETE FROM upload_shares WHERE feedback_id IN ${ids}`,
  ]
}
