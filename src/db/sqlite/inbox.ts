/** SQLite side of modules/admin-api/inbox-repo.ts: the queries as they were. */
import { caseForms, FOLDERS, SCAN_WINDOW, historyEntry, idFloor, inboxPage, type Folder, type Inbox, type InboxRow } from '../../modules/admin-api/inbox-repo'
import { HAS_SCREENSHOT, spamCondition } from '../sql/inbox'
import { LAST_SEQ_SQL } from './outbox'
import type { SqliteStorage } from './storage'

/** The columns of an inbox row (SQLite's booleans are 0/1; the caller maps them). */
export const COLUMNS = [
  'f.id', 'f.app_id AS appId', 'f.status', 'f.submitted_mode AS submittedMode', 'f.external_user_id AS externalUserId', 'f.email',
  'f.submitter_name AS submitterName', 'f.severity', 'f.text', 'f.url', 'f.created_at AS createdAt', 'f.processed_at AS processedAt',
  'f.merge_request_url AS mergeRequestUrl', 'f.duplicate_of_id AS duplicateOfId', 'f.duplicate_count AS duplicateCount', 'f.theme',
  'f.consolidated_text AS consolidatedText', 'f.last_duplicate_at AS lastDuplicateAt', 'f.redactions',
  'f.suggested_lead_id AS suggestedLeadId', 'f.suggested_score AS suggestedScore', 'f.suggested_reason AS suggestedReason',
  'f.merge_score AS mergeScore', 'f.merge_reason AS mergeReason', 'f.merge_locked AS mergeLocked',
  'f.spam_score AS spamScore', 'f.spam_reasons AS spamReasons', 'f.spam_marked_at AS spamMarkedAt',
  `${HAS_SCREENSHOT} AS hasScreenshot`,
  "(f.console_logs IS NOT NULL AND f.console_logs <> '[]') AS hasConsole",
  'r.read_at IS NOT NULL AS isRead',
].join(', ')


/**
 * A report's events, oldest first. Events carry the report's id in `feedback_id`; those stored before
 * migration 0013 only inside `data`: each half reads its own index (test/perf-plans.test.ts).
 */
export const HISTORY_SQL = `SELECT seq, type, data, created_at AS createdAt FROM events WHERE org_id = ?1 AND feedback_id = ?2
  UNION ALL
  SELECT seq, type, data, created_at FROM events WHERE org_id = ?1 AND feedback_id IS NULL AND json_extract(data, '$.feedbackId') = ?2
  ORDER BY seq LIMIT 500`

export function createSqliteInbox({ sqlite }: SqliteStorage): Inbox {
  return {
    async list(orgId, adminId, q) {
      const limit = q.limit ?? 50
      // Read before the rows: the page's live stream starts after this seq, so a report committed
      // between the two reads is in the page, in the stream, or both (the page drops the repeat).
      const eventSeq = (sqlite.query(LAST_SEQ_SQL).get(orgId) as { last_seq: number }).last_seq
      // Indexed conditions (Org, status, App, id range) pick a window of rows newest first; the
      // content filters (severity, text, URL, …) are applied inside that window only, so one request
      // reads at most SCAN_WINDOW rows however rare the match. A short page then still carries a
      // nextCursor: the scan continues below the window.
      const range: string[] = ['f.org_id = ?', 'f.duplicate_of_id IS NULL', spamCondition(q.folder)]
      const rangeParams: (string | number)[] = [orgId]
      const statuses: readonly string[] = FOLDERS[q.folder ?? 'inbox']
      if (statuses.length) {
        range.push(`f.status IN (${statuses.map(() => '?').join(',')})`)
        rangeParams.push(...statuses)
      }
      if (q.appId) {
        range.push('f.app_id = ?')
        rangeParams.push(q.appId)
      }
      if (q.from) {
        range.push('f.id >= ?')
        rangeParams.push(idFloor(Date.parse(q.from)))
      }
      // "to" is a day: everything created before the next midnight UTC.
      if (q.to) {
        range.push('f.id < ?')
        rangeParams.push(idFloor(Date.parse(q.to) + (q.to.length <= 10 ? 86_400_000 : 1000)))
      }
      if (q.cursor) {
        range.push('f.id < ?')
        rangeParams.push(q.cursor)
      }
      const content: string[] = []
      const contentParams: (string | number)[] = []
      const add = (sql: string, ...values: (string | number)[]) => {
        content.push(sql)
        contentParams.push(...values)
      }
      if (q.severity) add('f.severity = ?', q.severity)
      if (q.mode) add('f.submitted_mode = ?', q.mode)
      if (q.hasScreenshot !== undefined) add(`${HAS_SCREENSHOT} = ?`, q.hasScreenshot ? 1 : 0)
      if (q.hasConsole !== undefined) add(`(f.console_logs IS NOT NULL AND f.console_logs <> '[]') = ?`, q.hasConsole ? 1 : 0)
      if (q.urlContains) add('instr(lower(f.url), lower(?)) > 0', q.urlContains)
      if (q.q) {
        const forms = caseForms(q.q)
        add(`(instr(lower(f.text), lower(?)) > 0${' OR instr(f.text, ?) > 0'.repeat(forms.length)})`, q.q, ...forms)
      }
      const join = 'LEFT JOIN admin_reads r ON r.admin_id = ? AND r.feedback_id = f.id'
      let rows: InboxRow[]
      let windowEnd: string | null = null
      if (content.length === 0) {
        rows = sqlite.query(`SELECT ${COLUMNS} FROM feedback f ${join} WHERE ${range.join(' AND ')} ORDER BY f.id DESC LIMIT ?`).all(adminId, ...rangeParams, limit + 1) as InboxRow[]
      } else {
        rows = sqlite
          .query(
            `SELECT ${COLUMNS} FROM (SELECT * FROM feedback f WHERE ${range.join(' AND ')} ORDER BY f.id DESC LIMIT ${SCAN_WINDOW}) f ${join} WHERE ${content.join(' AND ')} ORDER BY f.id DESC LIMIT ?`,
          )
          .all(...rangeParams, adminId, ...contentParams, limit + 1) as InboxRow[]
        if (rows.length <= limit) {
          const last = sqlite.query(`SELECT f.id FROM feedback f WHERE ${range.join(' AND ')} ORDER BY f.id DESC LIMIT 1 OFFSET ${SCAN_WINDOW - 1}`).get(...rangeParams) as { id: string } | null
          windowEnd = last?.id ?? null
        }
      }
      return inboxPage(rows, limit, windowEnd, eventSeq)
    },

    async counts(orgId, adminId) {
      const out = {} as Record<Folder, number>
      for (const [folder, statuses] of Object.entries(FOLDERS) as [Folder, readonly string[]][]) {
        if (folder === 'all' || folder === 'archived') continue
        const row = sqlite
          .query(
            `SELECT COUNT(*) AS n FROM (SELECT 1 FROM feedback f LEFT JOIN admin_reads r ON r.admin_id = ? AND r.feedback_id = f.id WHERE f.org_id = ?${statuses.length ? ` AND f.status IN (${statuses.map(() => '?').join(',')})` : ''} AND ${spamCondition(folder)} AND f.duplicate_of_id IS NULL AND r.read_at IS NULL LIMIT 1000)`,
          )
          .get(adminId, orgId, ...statuses) as { n: number }
        out[folder] = row.n
      }
      return out
    },

    async markRead(orgId, adminId, ids, now) {
      const stmt = sqlite.query('INSERT OR IGNORE INTO admin_reads (admin_id, feedback_id, read_at) SELECT ?, id, ? FROM feedback WHERE id = ? AND org_id = ?')
      let n = 0
      sqlite.transaction(() => {
        for (const id of ids) n += stmt.run(adminId, now, id, orgId).changes
      })()
      return n
    },

    async markUnread(orgId, adminId, ids) {
      const stmt = sqlite.query('DELETE FROM admin_reads WHERE admin_id = ? AND feedback_id = ? AND feedback_id IN (SELECT id FROM feedback WHERE id = ? AND org_id = ?)')
      sqlite.transaction(() => {
        for (const id of ids) stmt.run(adminId, id, id, orgId)
      })()
    },

    history: async (orgId, feedbackId) => (sqlite.query(HISTORY_SQL).all(orgId, feedbackId) as { seq: number; type: string; data: string; createdAt: number }[]).map(historyEntry),
  }
}
