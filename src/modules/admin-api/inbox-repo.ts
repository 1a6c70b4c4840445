/**
 * The triage inbox query: one Org's reports in a status folder, newest first, with the dashboard's
 * filters and this admin's unread marks. Ids sort by creation time, so paging is `id < cursor` on the
 * (org_id, status, id) index and a date range is an id range: a page costs the same at row 1M as at 1.
 */
import type { Database } from 'bun:sqlite'
import { previewBudget, toListItem } from '../feedback/present'
import type { ListRow } from '../feedback/repo'
import { LAST_SEQ_SQL } from '../../db/sqlite/outbox'

/** Folder → the statuses it shows. "inbox" is everything not yet decided (new and awaiting a human). */
export const FOLDERS = {
  inbox: ['received', 'sanitizing', 'sanitized', 'awaiting_manual'],
  awaiting_manual: ['awaiting_manual'],
  queued: ['queued'],
  running: ['agent_running'],
  pr_opened: ['pr_opened'],
  failed: ['failed'],
  archived: ['archived'],
  all: [],
} as const satisfies Record<string, readonly string[]>
export type Folder = keyof typeof FOLDERS

/** Most rows one filtered inbox request reads (see list()). */
export const SCAN_WINDOW = 20_000

export interface InboxQuery {
  folder?: Folder
  appId?: string
  severity?: string
  mode?: 'public' | 'private'
  hasScreenshot?: boolean
  hasConsole?: boolean
  urlContains?: string
  /** ISO dates (inclusive day bounds are the caller's business). */
  from?: string
  to?: string
  q?: string
  cursor?: string
  limit?: number
}

const HAS_SCREENSHOT = `(f.component_target LIKE '%"screenshotKey"%' OR f.attachments LIKE '%"kind":"screenshot"%')`

const COLUMNS = [
  'f.id', 'f.app_id AS appId', 'f.status', 'f.submitted_mode AS submittedMode', 'f.external_user_id AS externalUserId', 'f.email',
  'f.submitter_name AS submitterName', 'f.severity', 'f.text', 'f.url', 'f.created_at AS createdAt', 'f.processed_at AS processedAt',
  'f.merge_request_url AS mergeRequestUrl', 'f.duplicate_of_id AS duplicateOfId', 'f.duplicate_count AS duplicateCount', 'f.theme',
  'f.consolidated_text AS consolidatedText', 'f.last_duplicate_at AS lastDuplicateAt', 'f.redactions',
  `${HAS_SCREENSHOT} AS hasScreenshot`,
  "(f.console_logs IS NOT NULL AND f.console_logs <> '[]') AS hasConsole",
  'r.read_at IS NOT NULL AS isRead',
].join(', ')

/** The smallest id created at or after `ms` (ids start with 4 bytes of unix seconds). */
export function idFloor(ms: number): string {
  return Math.max(0, Math.floor(ms / 1000)).toString(16).padStart(8, '0').slice(-8) + '0'.repeat(16)
}

/**
 * A report's events, oldest first. Events carry the report's id in `feedback_id`; those stored before
 * migration 0013 only inside `data`: each half reads its own index (test/perf-plans.test.ts).
 */
export const HISTORY_SQL = `SELECT seq, type, data, created_at AS createdAt FROM events WHERE org_id = ?1 AND feedback_id = ?2
  UNION ALL
  SELECT seq, type, data, created_at FROM events WHERE org_id = ?1 AND feedback_id IS NULL AND json_extract(data, '$.feedbackId') = ?2
  ORDER BY seq LIMIT 500`

export function createInbox(sqlite: Database) {
  return {
    list(orgId: string, adminId: string, q: InboxQuery) {
      const limit = q.limit ?? 50
      // Read before the rows: the page's live stream starts after this seq, so a report committed
      // between the two reads is in the page, in the stream, or both (the page drops the repeat).
      const eventSeq = (sqlite.query(LAST_SEQ_SQL).get(orgId) as { last_seq: number }).last_seq
      // Indexed conditions (Org, status, App, id range) pick a window of rows newest first; the
      // content filters (severity, text, URL, …) are applied inside that window only, so one request
      // reads at most SCAN_WINDOW rows however rare the match. A short page then still carries a
      // nextCursor: the scan continues below the window.
      const range: string[] = ['f.org_id = ?', 'f.duplicate_of_id IS NULL']
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
      if (q.q) add('instr(lower(f.text), lower(?)) > 0', q.q)
      const join = 'LEFT JOIN admin_reads r ON r.admin_id = ? AND r.feedback_id = f.id'
      type Row = ListRow & { hasScreenshot: number; hasConsole: number; isRead: number }
      let rows: Row[]
      let windowEnd: string | null = null
      if (content.length === 0) {
        rows = sqlite.query(`SELECT ${COLUMNS} FROM feedback f ${join} WHERE ${range.join(' AND ')} ORDER BY f.id DESC LIMIT ?`).all(adminId, ...rangeParams, limit + 1) as Row[]
      } else {
        rows = sqlite
          .query(
            `SELECT ${COLUMNS} FROM (SELECT * FROM feedback f WHERE ${range.join(' AND ')} ORDER BY f.id DESC LIMIT ${SCAN_WINDOW}) f ${join} WHERE ${content.join(' AND ')} ORDER BY f.id DESC LIMIT ?`,
          )
          .all(...rangeParams, adminId, ...contentParams, limit + 1) as Row[]
        if (rows.length <= limit) {
          const last = sqlite.query(`SELECT f.id FROM feedback f WHERE ${range.join(' AND ')} ORDER BY f.id DESC LIMIT 1 OFFSET ${SCAN_WINDOW - 1}`).get(...rangeParams) as { id: string } | null
          windowEnd = last?.id ?? null
        }
      }
      const more = rows.length > limit
      const page = more ? rows.slice(0, limit) : rows
      // One read's budget of on-the-fly previews for the page's pending reports (present.ts).
      const budget = previewBudget()
      return {
        data: page.map((r) => ({ ...toListItem(r, budget), hasScreenshot: !!r.hasScreenshot, hasConsole: !!r.hasConsole, read: !!r.isRead })),
        nextCursor: more ? page[page.length - 1].id : windowEnd,
        eventSeq,
      }
    },

    /** Per-folder counts of unread leads, for the sidebar. Bounded: counts stop at 1000 ("999+"). */
    counts(orgId: string, adminId: string): Record<Folder, number> {
      const out = {} as Record<Folder, number>
      for (const [folder, statuses] of Object.entries(FOLDERS) as [Folder, readonly string[]][]) {
        if (folder === 'all' || folder === 'archived') continue
        const row = sqlite
          .query(
            `SELECT COUNT(*) AS n FROM (SELECT 1 FROM feedback f LEFT JOIN admin_reads r ON r.admin_id = ? AND r.feedback_id = f.id WHERE f.org_id = ? AND f.status IN (${statuses.map(() => '?').join(',')}) AND f.duplicate_of_id IS NULL AND r.read_at IS NULL LIMIT 1000)`,
          )
          .get(adminId, orgId, ...statuses) as { n: number }
        out[folder] = row.n
      }
      return out
    },

    /** Marks reports read for this admin (ids of another Org are ignored). */
    markRead(orgId: string, adminId: string, ids: string[], now: number): number {
      const stmt = sqlite.query('INSERT OR IGNORE INTO admin_reads (admin_id, feedback_id, read_at) SELECT ?, id, ? FROM feedback WHERE id = ? AND org_id = ?')
      let n = 0
      sqlite.transaction(() => {
        for (const id of ids) n += stmt.run(adminId, now, id, orgId).changes
      })()
      return n
    },

    markUnread(orgId: string, adminId: string, ids: string[]): void {
      const stmt = sqlite.query('DELETE FROM admin_reads WHERE admin_id = ? AND feedback_id = ? AND feedback_id IN (SELECT id FROM feedback WHERE id = ? AND org_id = ?)')
      sqlite.transaction(() => {
        for (const id of ids) stmt.run(adminId, id, id, orgId)
      })()
    },

    /** Status history of one report from the event log, oldest first. */
    history(orgId: string, feedbackId: string) {
      return (
        sqlite
          .query(HISTORY_SQL)
          .all(orgId, feedbackId) as { seq: number; type: string; data: string; createdAt: number }[]
      ).map((e) => ({ seq: e.seq, type: e.type, data: JSON.parse(e.data) as Record<string, unknown>, createdAt: new Date(e.createdAt).toISOString() }))
    },
  }
}
export type Inbox = ReturnType<typeof createInbox>
