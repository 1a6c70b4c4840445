/**
 * PostgreSQL side of modules/admin-api/inbox-repo.ts: the same window-then-filter query. Aliases are
 * quoted (PostgreSQL folds unquoted names to lower case); `instr` is `strpos`; JSON is read with `->>`.
 */
import { caseForms, FOLDERS, SCAN_WINDOW, historyEntry, idFloor, inboxPage, type Folder, type Inbox, type InboxRow } from '../../modules/admin-api/inbox-repo'
import { HAS_SCREENSHOT, spamCondition } from '../sql/inbox'
import { PG_LAST_SEQ_SQL } from './outbox'
import { exec, many, one, type PgStorage } from './storage'

/** Built on first use: modules/admin-api/inbox-repo.ts (HAS_SCREENSHOT) imports this file. */
const columns = () => [
  'f.id', 'f.app_id AS "appId"', 'f.status', 'f.submitted_mode AS "submittedMode"', 'f.external_user_id AS "externalUserId"', 'f.email',
  'f.submitter_name AS "submitterName"', 'f.severity', 'f.text', 'f.url', 'f.created_at AS "createdAt"', 'f.processed_at AS "processedAt"',
  'f.merge_request_url AS "mergeRequestUrl"', 'f.duplicate_of_id AS "duplicateOfId"', 'f.duplicate_count AS "duplicateCount"', 'f.theme',
  'f.consolidated_text AS "consolidatedText"', 'f.last_duplicate_at AS "lastDuplicateAt"', 'f.redactions',
  'f.suggested_lead_id AS "suggestedLeadId"', 'f.suggested_score AS "suggestedScore"', 'f.suggested_reason AS "suggestedReason"',
  'f.merge_score AS "mergeScore"', 'f.merge_reason AS "mergeReason"', 'f.merge_locked AS "mergeLocked"',
  'f.spam_score AS "spamScore"', 'f.spam_reasons AS "spamReasons"', 'f.spam_marked_at AS "spamMarkedAt"',
  `${HAS_SCREENSHOT} AS "hasScreenshot"`,
  `(f.console_logs IS NOT NULL AND f.console_logs <> '[]') AS "hasConsole"`,
  'r.read_at IS NOT NULL AS "isRead"',
].join(', ')

const HISTORY = `SELECT seq, type, data, created_at AS "createdAt" FROM events WHERE org_id = $1 AND feedback_id = $2
  UNION ALL
  SELECT seq, type, data, created_at FROM events WHERE org_id = $1 AND feedback_id IS NULL AND (data::jsonb ->> 'feedbackId') = $2
  ORDER BY seq LIMIT 500`

export function createPgInbox({ pool }: PgStorage): Inbox {
  const COLUMNS = columns()
  return {
    async list(orgId, adminId, q) {
      const limit = q.limit ?? 50
      // Read before the rows: the page's live stream starts after this seq (see the SQLite side).
      const eventSeq = (await one<{ last_seq: number }>(pool, PG_LAST_SEQ_SQL, [orgId]))!.last_seq
      const params: unknown[] = [adminId]
      const p = (v: unknown) => {
        params.push(v)
        return `$${params.length}`
      }
      const range: string[] = [`f.org_id = ${p(orgId)}`, 'f.duplicate_of_id IS NULL', spamCondition(q.folder)]
      const statuses: readonly string[] = FOLDERS[q.folder ?? 'inbox']
      if (statuses.length) range.push(`f.status = ANY(${p([...statuses])}::text[])`)
      if (q.appId) range.push(`f.app_id = ${p(q.appId)}`)
      if (q.from) range.push(`f.id >= ${p(idFloor(Date.parse(q.from)))}`)
      // "to" is a day: everything created before the next midnight UTC.
      if (q.to) range.push(`f.id < ${p(idFloor(Date.parse(q.to) + (q.to.length <= 10 ? 86_400_000 : 1000)))}`)
      if (q.cursor) range.push(`f.id < ${p(q.cursor)}`)
      const rangeParamCount = params.length
      const content: string[] = []
      if (q.severity) content.push(`f.severity = ${p(q.severity)}`)
      if (q.mode) content.push(`f.submitted_mode = ${p(q.mode)}`)
      if (q.hasScreenshot !== undefined) content.push(`${HAS_SCREENSHOT} = ${p(q.hasScreenshot)}::boolean`)
      if (q.hasConsole !== undefined) content.push(`(f.console_logs IS NOT NULL AND f.console_logs <> '[]') = ${p(q.hasConsole)}::boolean`)
      if (q.urlContains) content.push(`strpos(lower(f.url), lower(${p(q.urlContains)})) > 0`)
      if (q.q) content.push(`(strpos(lower(f.text), lower(${p(q.q)})) > 0${caseForms(q.q).map((form) => ` OR strpos(f.text, ${p(form)}) > 0`).join('')})`)
      const join = 'LEFT JOIN admin_reads r ON r.admin_id = $1 AND r.feedback_id = f.id'
      let windowEnd: string | null = null
      let rows: InboxRow[]
      if (content.length === 0) {
        rows = await many<InboxRow>(pool, `SELECT ${COLUMNS} FROM feedback f ${join} WHERE ${range.join(' AND ')} ORDER BY f.id DESC LIMIT ${p(limit + 1)}`, params)
      } else {
        rows = await many<InboxRow>(
          pool,
          `SELECT ${COLUMNS} FROM (SELECT * FROM feedback f WHERE ${range.join(' AND ')} ORDER BY f.id DESC LIMIT ${SCAN_WINDOW}) f ${join} WHERE ${content.join(' AND ')} ORDER BY f.id DESC LIMIT ${p(limit + 1)}`,
          params,
        )
        if (rows.length <= limit) {
          // The range's own parameters only ($2…), renumbered from $1.
          const text = `SELECT f.id FROM feedback f WHERE ${range.join(' AND ')} ORDER BY f.id DESC LIMIT 1 OFFSET ${SCAN_WINDOW - 1}`.replace(/\$(\d+)/g, (_m, n) => `$${Number(n) - 1}`)
          windowEnd = (await one<{ id: string }>(pool, text, params.slice(1, rangeParamCount)))?.id ?? null
        }
      }
      return inboxPage(rows, limit, windowEnd, eventSeq)
    },

    async counts(orgId, adminId) {
      const out = {} as Record<Folder, number>
      for (const [folder, statuses] of Object.entries(FOLDERS) as [Folder, readonly string[]][]) {
        if (folder === 'all' || folder === 'archived') continue
        const row = await one<{ n: number }>(
          pool,
          `SELECT COUNT(*)::int AS n FROM (SELECT 1 FROM feedback f LEFT JOIN admin_reads r ON r.admin_id = $1 AND r.feedback_id = f.id
             WHERE f.org_id = $2 AND (cardinality($3::text[]) = 0 OR f.status = ANY($3::text[])) AND ${spamCondition(folder)} AND f.duplicate_of_id IS NULL AND r.read_at IS NULL LIMIT 1000) c`,
          [adminId, orgId, [...statuses]],
        )
        out[folder] = row!.n
      }
      return out
    },

    markRead: (orgId, adminId, ids, now) =>
      exec(
        pool,
        'INSERT INTO admin_reads (admin_id, feedback_id, read_at) SELECT $1, id, $2 FROM feedback WHERE id = ANY($3::text[]) AND org_id = $4 ORDER BY id ON CONFLICT DO NOTHING',
        [adminId, now, ids, orgId],
      ),

    markUnread: async (orgId, adminId, ids) =>
      void (await exec(pool, 'DELETE FROM admin_reads WHERE admin_id = $1 AND feedback_id IN (SELECT id FROM feedback WHERE id = ANY($2::text[]) AND org_id = $3)', [adminId, ids, orgId])),

    history: async (orgId, feedbackId) => (await many<{ seq: number; type: string; data: string; createdAt: number }>(pool, HISTORY, [orgId, feedbackId])).map(historyEntry),
  }
}
