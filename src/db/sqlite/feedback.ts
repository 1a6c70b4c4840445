/**
 * SQLite side of modules/feedback/repo.ts. Hot statements are prepared once; list variants are prepared
 * lazily, one per filter combination. The submission is one synchronous write in the intake group
 * commit (src/db/sqlite/group-commit.ts): no transaction or statement of its own beyond the batch's.
 */
import { and, desc, eq, sql } from 'drizzle-orm'
import type { Statement } from 'bun:sqlite'
import { feedback, jobs, repoConnections } from '../schema'
import type { Clock } from '../../core/clock'
import { newId } from '../../core/ids'
import type { GroupCommitter } from './group-commit'
import type { SqliteLifecycle } from './lifecycle'
import type { SqliteStorage } from './storage'
import { createdAnswer, idempotencyVerdict, spamListCondition, type FeedbackRepo, type IdempotencyRow, type ListFilter, type ListRow, type ReportDraft } from '../../modules/feedback/repo'
import { prepareMarkReferenced } from './uploads'
import { feedbackChangeBodies } from '../bodies/feedback-changes'
import type { RootState } from '../../dedup/cluster-repo'

export const LIST_COLUMNS = [
  'id', 'app_id AS appId', 'status', 'submitted_mode AS submittedMode', 'external_user_id AS externalUserId', 'email',
  'submitter_name AS submitterName', 'severity', 'text', 'url', 'created_at AS createdAt', 'processed_at AS processedAt',
  'merge_request_url AS mergeRequestUrl', 'duplicate_of_id AS duplicateOfId', 'duplicate_count AS duplicateCount', 'theme',
  'consolidated_text AS consolidatedText', 'last_duplicate_at AS lastDuplicateAt', 'redactions', 'version',
  'suggested_lead_id AS suggestedLeadId', 'suggested_score AS suggestedScore', 'suggested_reason AS suggestedReason',
  'merge_score AS mergeScore', 'merge_reason AS mergeReason', 'merge_locked AS mergeLocked',
  'spam_score AS spamScore', 'spam_reasons AS spamReasons', 'spam_marked_at AS spamMarkedAt',
].join(', ')

/** The list page's SQL for one filter combination (the values are bound: $orgId, $appId, $status, $cursor, $limit). */
export function listSql(f: Pick<ListFilter, 'appId' | 'status' | 'cursor' | 'includeDuplicates' | 'spam'>): string {
  // With an appId the App's Org was checked by the caller; the tenant guard stays anyway.
  // `+$x`: same plan, without the ~6 µs a bound value compared straight to the ordered index costs per
  // execution with bun's SQLite (lifecycle/outbox.ts, LAST_SEQ_SQL; test/perf-plans.test.ts).
  const conds = [f.appId ? 'app_id = +$appId AND org_id = +$orgId' : 'org_id = +$orgId']
  if (f.status) conds.push('status = +$status')
  if (f.cursor) conds.push('id < $cursor')
  if (!f.includeDuplicates) conds.push('duplicate_of_id IS NULL')
  const spam = spamListCondition(f.spam)
  if (spam) conds.push(spam)
  return `SELECT ${LIST_COLUMNS} FROM feedback WHERE ${conds.join(' AND ')} ORDER BY id DESC LIMIT $limit`
}

export function createSqliteFeedbackRepo({ sqlite, db }: SqliteStorage, lifecycle: SqliteLifecycle, clock: Clock, committer: GroupCommitter): FeedbackRepo {
  // The submission's writes are plain prepared statements: drizzle rebuilt their parameter lists per call
  // (fillPlaceholders), a measurable share of a submission's CPU.
  const insertFeedback = sqlite.prepare(
    `INSERT INTO feedback (id, org_id, app_id, status, severity, text, url, user_agent, viewport, console_logs, attachments,
       component_target, metadata, submitted_mode, external_user_id, email, submitter_name, user_context, notify_email_sealed, created_at, updated_at,
       spam_score, spam_reasons, spam_marked_at, redactions)
     VALUES (?, ?, ?, 'received', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  const spamCount = sqlite.prepare<{ n: number }, [string]>('SELECT COUNT(*) AS n FROM (SELECT 1 FROM feedback WHERE app_id = ? AND spam_marked_at IS NOT NULL LIMIT 100000)')
  const changes = feedbackChangeBodies(lifecycle.bodies, clock)
  const getOne = db
    .select()
    .from(feedback)
    .where(and(eq(feedback.orgId, sql.placeholder('orgId')), eq(feedback.id, sql.placeholder('id'))))
    .prepare()
  const getIdempotent = sqlite.prepare<IdempotencyRow, [string, string]>(
    'SELECT request_hash AS requestHash, status_code AS statusCode, response_body AS responseBody, created_at AS createdAt FROM idempotency_keys WHERE app_id = ? AND key = ?',
  )
  const insertIdempotent = sqlite.prepare(
    `INSERT INTO idempotency_keys (app_id, key, request_hash, status_code, response_body, created_at) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (app_id, key) DO UPDATE SET request_hash = excluded.request_hash, status_code = excluded.status_code,
       response_body = excluded.response_body, created_at = excluded.created_at`,
  )
  const markReferenced = prepareMarkReferenced(sqlite)
  const orgOf = sqlite.prepare<{ org_id: string }, [string]>('SELECT org_id FROM feedback WHERE id = ?')
  const leadStates = sqlite.prepare<RootState & { id: string }, [string, string]>(
    'SELECT id, status, duplicate_of_id, spam_marked_at FROM feedback WHERE org_id = ? AND id IN (SELECT value FROM json_each(?))',
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
    const variant = [f.appId ? 'a' : 'o', f.status ? 's' : '', f.cursor ? 'c' : '', f.includeDuplicates ? 'd' : '', f.spam ?? 'exclude'].join('')
    let stmt = listStatements.get(variant)
    if (!stmt) {
      stmt = sqlite.query(listSql(f))
      listStatements.set(variant, stmt)
    }
    return stmt
  }

  /** Stores a new report in status `received`. */
  function insert(id: string, r: ReportDraft, now: number): void {
    insertFeedback.run(
      id, r.orgId, r.appId, r.severity, r.text, r.url, r.userAgent, r.viewport, r.consoleLogs, r.attachments, r.componentTarget,
      r.metadata, r.submittedMode, r.externalUserId, r.email, r.submitterName, r.userContext, r.notifyEmailSealed ?? null, now, now,
      r.spam?.score ?? null, r.spam?.reasons ?? null, r.spam ? now : null, r.spam?.redactions ?? null,
    )
  }

  return {
    // Synchronous inside the batch transaction: the key is read and the report written under the write
    // lock, so two retries of one key in flight at once store one report.
    submit: (draft, refKeys, idempotency) =>
      committer.run(() => {
        const now = clock.now()
        if (idempotency) {
          const verdict = idempotencyVerdict(getIdempotent.get(draft.appId, idempotency.key), idempotency, now)
          if (verdict !== 'fresh') return verdict
        }
        const id = newId(clock)
        insert(id, draft, now)
        if (draft.spam) lifecycle.receivedAsSpam(sqlite, { orgId: draft.orgId, appId: draft.appId, feedbackId: id }, draft.spam.emitEvent)
        else lifecycle.received(sqlite, { orgId: draft.orgId, appId: draft.appId, feedbackId: id })
        for (const key of refKeys) markReferenced.run(id, key)
        const result = createdAnswer(id)
        if (idempotency) insertIdempotent.run(draft.appId, idempotency.key, idempotency.requestHash, result.status, JSON.stringify(result.body), now)
        return { kind: 'answered' as const, result }
      }),
    get: async (orgId, id) => getOne.get({ orgId, id }),
    list: async (f) => {
      const params: Record<string, string | number> = { orgId: f.orgId, limit: f.limit + 1 }
      if (f.appId) params.appId = f.appId
      if (f.status) params.status = f.status
      if (f.cursor) params.cursor = f.cursor
      return listStatement(f).all(params) as ListRow[]
    },
    hasRepoConnection: async (appId) => connectionOf.get({ appId }) !== undefined,
    batchClosesAt: async (appId) => batchClosesAt.get({ appId })?.runAfter ?? null,
    duplicatesOf: async (orgId, leadId, limit) => duplicatesOf.all({ orgId, leadId, limit }),
    orgOf: async (id) => orgOf.get(id)?.org_id,
    async leadStates(orgId, ids) {
      const out = new Map<string, RootState>()
      if (ids.length > 0) for (const r of leadStates.all(orgId, JSON.stringify(ids))) out.set(r.id, { status: r.status, duplicate_of_id: r.duplicate_of_id, spam_marked_at: r.spam_marked_at })
      return out
    },
    // Read and move under one write lock (src/db/bodies/feedback-changes.ts): the processing thread (its own
    // connection) cannot move the report in between, so a PATCH right after a submission does not lose a race it never saw.
    customerMove: async (orgId, id, to) => lifecycle.driver.transaction(changes.customerMove(orgId, id, to)),
    resolveByHand: async (orgId, id, audit) => lifecycle.driver.transaction(changes.resolveByHand(orgId, id, audit)),
    setSpam: async (orgId, id, change, now) => lifecycle.driver.transaction(changes.setSpam(orgId, id, change, now)),
    spamCount: async (appId) => spamCount.get(appId)!.n,
  }
}
