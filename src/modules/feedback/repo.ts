/**
 * Feedback queries. Every read takes the Org in its signature, so another Org's id finds nothing (404).
 * Hot statements are prepared once; list variants are prepared lazily, one per filter combination.
 */
import { and, desc, eq, isNull, lt, sql, type SQL } from 'drizzle-orm'
import type { Statement } from 'bun:sqlite'
import type { Db } from '../../db/client'
import { feedback, jobs, repoConnections } from '../../db/schema'

export type FeedbackRow = typeof feedback.$inferSelect

/** The columns a list entry needs (spec 2.2), plus `redactions` to tell whether the row is sanitized. */
export type ListRow = Pick<
  FeedbackRow,
  | 'id' | 'appId' | 'status' | 'submittedMode' | 'externalUserId' | 'email' | 'submitterName' | 'severity' | 'text' | 'url'
  | 'createdAt' | 'processedAt' | 'mergeRequestUrl' | 'duplicateOfId' | 'duplicateCount' | 'theme' | 'consolidatedText'
  | 'lastDuplicateAt' | 'redactions' | 'version'
>

const LIST_COLUMNS = [
  'id', 'app_id AS appId', 'status', 'submitted_mode AS submittedMode', 'external_user_id AS externalUserId', 'email',
  'submitter_name AS submitterName', 'severity', 'text', 'url', 'created_at AS createdAt', 'processed_at AS processedAt',
  'merge_request_url AS mergeRequestUrl', 'duplicate_of_id AS duplicateOfId', 'duplicate_count AS duplicateCount', 'theme',
  'consolidated_text AS consolidatedText', 'last_duplicate_at AS lastDuplicateAt', 'redactions', 'version',
].join(', ')

/** A report as submitted: its JSON columns already encoded, no status (a new report is `received`). */
export interface NewFeedback {
  id: string
  orgId: string
  appId: string
  severity: string | null
  text: string
  url: string | null
  userAgent: string | null
  viewport: string | null
  consoleLogs: string | null
  attachments: string | null
  componentTarget: string | null
  metadata: string | null
  submittedMode: 'public' | 'private'
  externalUserId: string | null
  email: string | null
  submitterName: string | null
  userContext: string | null
  createdAt: number
}

/** A stored Idempotency-Key: what the first request looked like and what it was answered. */
export interface IdempotencyRow {
  requestHash: string
  statusCode: number
  responseBody: string
  createdAt: number
}

export interface ListFilter {
  orgId: string
  appId?: string
  status?: string
  cursor?: string
  includeDuplicates: boolean
  limit: number
}

/** The list page's SQL for one filter combination (the values are bound: $orgId, $appId, $status, $cursor, $limit). */
export function listSql(f: Pick<ListFilter, 'appId' | 'status' | 'cursor' | 'includeDuplicates'>): string {
  // With an appId the App's Org was checked by the caller; the tenant guard stays anyway.
  // `+$x`: same plan, without the ~6 µs a bound value compared straight to the ordered index costs per
  // execution with bun's SQLite (lifecycle/outbox.ts, LAST_SEQ_SQL; test/perf-plans.test.ts).
  const conds = [f.appId ? 'app_id = +$appId AND org_id = +$orgId' : 'org_id = +$orgId']
  if (f.status) conds.push('status = +$status')
  if (f.cursor) conds.push('id < $cursor')
  if (!f.includeDuplicates) conds.push('duplicate_of_id IS NULL')
  return `SELECT ${LIST_COLUMNS} FROM feedback WHERE ${conds.join(' AND ')} ORDER BY id DESC LIMIT $limit`
}

export function createFeedbackRepo(db: Db) {
  // The submission's writes are plain prepared statements: drizzle rebuilt their parameter lists per call
  // (fillPlaceholders), a measurable share of a submission's CPU.
  const insertFeedback = db.$client.prepare(
    `INSERT INTO feedback (id, org_id, app_id, status, severity, text, url, user_agent, viewport, console_logs, attachments,
       component_target, metadata, submitted_mode, external_user_id, email, submitter_name, user_context, created_at, updated_at)
     VALUES (?, ?, ?, 'received', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  const getOne = db
    .select()
    .from(feedback)
    .where(and(eq(feedback.orgId, sql.placeholder('orgId')), eq(feedback.id, sql.placeholder('id'))))
    .prepare()
  const getIdempotent = db.$client.prepare<IdempotencyRow, [string, string]>(
    'SELECT request_hash AS requestHash, status_code AS statusCode, response_body AS responseBody, created_at AS createdAt FROM idempotency_keys WHERE app_id = ? AND key = ?',
  )
  const insertIdempotent = db.$client.prepare(
    `INSERT INTO idempotency_keys (app_id, key, request_hash, status_code, response_body, created_at) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (app_id, key) DO UPDATE SET request_hash = excluded.request_hash, status_code = excluded.status_code,
       response_body = excluded.response_body, created_at = excluded.created_at`,
  )
  const duplicatesOf = db
    .select()
    .from(feedback)
    .where(and(eq(feedback.orgId, sql.placeholder('orgId')), eq(feedback.duplicateOfId, sql.placeholder('leadId'))))
    .orderBy(desc(feedback.id))
    .limit(sql.placeholder('limit'))
    .prepare()

  const connectionOf = db
    .select({ appId: repoConnections.appId })
    .from(repoConnections)
    .where(eq(repoConnections.appId, sql.placeholder('appId')))
    .prepare()

  const batchClosesAt = db
    .select({ runAfter: jobs.runAfter })
    .from(jobs)
    .where(and(eq(jobs.kind, 'batch_release'), eq(jobs.appId, sql.placeholder('appId'))))
    .limit(1)
    .prepare()

  const listStatements = new Map<string, Statement>()

  /**
   * The list page reads only the list's columns, straight from bun:sqlite with camelCase aliases: the
   * full row (JSON blobs, user agent) and drizzle's per-row mapping cost ~40% of a list request.
   */
  function listStatement(f: ListFilter): Statement {
    const variant = [f.appId ? 'a' : 'o', f.status ? 's' : '', f.cursor ? 'c' : '', f.includeDuplicates ? 'd' : ''].join('')
    let stmt = listStatements.get(variant)
    if (!stmt) {
      stmt = db.$client.query(listSql(f))
      listStatements.set(variant, stmt)
    }
    return stmt
  }

  return {
    /** Stores a new report in status `received` (the lifecycle records its event and job in the same write). */
    insert(r: NewFeedback): void {
      insertFeedback.run(
        r.id, r.orgId, r.appId, r.severity, r.text, r.url, r.userAgent, r.viewport, r.consoleLogs, r.attachments, r.componentTarget,
        r.metadata, r.submittedMode, r.externalUserId, r.email, r.submitterName, r.userContext, r.createdAt, r.createdAt,
      )
    },
    get: (orgId: string, id: string): FeedbackRow | undefined => getOne.get({ orgId, id }),
    /** Newest first; fetches one row past the page to know whether another page exists. */
    list(f: ListFilter): ListRow[] {
      const params: Record<string, string | number> = { orgId: f.orgId, limit: f.limit + 1 }
      if (f.appId) params.appId = f.appId
      if (f.status) params.status = f.status
      if (f.cursor) params.cursor = f.cursor
      return listStatement(f).all(params) as ListRow[]
    },
    /** Is the App connected to a repository (can its queued reports get an agent run)? */
    hasRepoConnection: (appId: string): boolean => connectionOf.get({ appId }) !== undefined,
    /** When the App's open batch window closes (epoch ms), or null when none is open. */
    batchClosesAt: (appId: string): number | null => batchClosesAt.get({ appId })?.runAfter ?? null,
    duplicatesOf: (orgId: string, leadId: string, limit: number): FeedbackRow[] => duplicatesOf.all({ orgId, leadId, limit }),
    getIdempotency: (appId: string, key: string): IdempotencyRow | null => getIdempotent.get(appId, key),
    saveIdempotency: (row: { appId: string; key: string; requestHash: string; statusCode: number; responseBody: string; createdAt: number }) =>
      insertIdempotent.run(row.appId, row.key, row.requestHash, row.statusCode, row.responseBody, row.createdAt),
  }
}
