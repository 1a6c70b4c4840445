/**
 * One uploaded object listed by several reports (a client may attach the same key again): the first report
 * to reference it owns it (`uploads.feedback_id`), the others are recorded in `upload_shares`. Both
 * dialects run these texts (src/db/{sqlite,pg}/{feedback,uploads,reporters,abuse}.ts), each with its own
 * placeholders, so the rule is written once:
 *
 * - a submission marks each key it references: owned if nobody owned it, else shared;
 * - removing reports (an erasure, the retention, the spam retention) first hands each object they own to
 *   the oldest surviving report that shares it, and only the objects nobody else lists are deleted.
 */

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
