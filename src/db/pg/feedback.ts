/**
 * PostgreSQL side of modules/feedback/repo.ts. The submission is one write in the PostgreSQL intake
 * group commit (src/db/pg/group-commit.ts): the key's row is read `FOR UPDATE` (two retries of one key
 * in flight at once: the second waits, then replays), and a first use of a key is settled by its
 * primary key (`ON CONFLICT DO NOTHING`, then the winner's row replayed).
 */
import { and, desc, eq } from 'drizzle-orm'
import { feedback } from './schema'
import type { Clock } from '../../core/clock'
import { newId } from '../../core/ids'
import type { PgBulk, PgGroupCommitter, PgWriteTx } from './group-commit'
import type { PgLifecycle } from './lifecycle'
import { many, one, prepared, type PgStorage } from './storage'
import { markReferencedPg } from './uploads'
import { feedbackChangeBodies } from '../bodies/feedback-changes'
import { pgRunner } from './tx-body'
import {
  createdAnswer, idempotencyVerdict, spamListCondition, type FeedbackRepo, type IdempotencyClaim, type IdempotencyRow, type ListFilter, type ListRow, type ReportDraft,
  type SubmitOutcome,
} from '../../modules/feedback/repo'
import type { RootState } from '../../dedup/cluster-repo'

export const LIST_COLUMNS = [
  'id', 'app_id AS "appId"', 'status', 'submitted_mode AS "submittedMode"', 'external_user_id AS "externalUserId"', 'email',
  'submitter_name AS "submitterName"', 'severity', 'text', 'url', 'created_at AS "createdAt"', 'processed_at AS "processedAt"',
  'merge_request_url AS "mergeRequestUrl"', 'duplicate_of_id AS "duplicateOfId"', 'duplicate_count AS "duplicateCount"', 'theme',
  'consolidated_text AS "consolidatedText"', 'last_duplicate_at AS "lastDuplicateAt"', 'redactions', 'version',
  'suggested_lead_id AS "suggestedLeadId"', 'suggested_score AS "suggestedScore"', 'suggested_reason AS "suggestedReason"',
  'merge_score AS "mergeScore"', 'merge_reason AS "mergeReason"', 'merge_locked AS "mergeLocked"',
  'spam_score AS "spamScore"', 'spam_reasons AS "spamReasons"', 'spam_marked_at AS "spamMarkedAt"',
].join(', ')

const INSERT_FEEDBACK = `INSERT INTO feedback (id, org_id, app_id, status, severity, text, url, user_agent, viewport, console_logs, attachments,
    component_target, metadata, submitted_mode, external_user_id, email, submitter_name, user_context, notify_email_sealed, created_at, updated_at)
  VALUES ($1, $2, $3, 'received', $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $19, $18, $18)`
// A report classified as spam at intake (issue 27): the same row with its mark.
const INSERT_SPAM = `INSERT INTO feedback (id, org_id, app_id, status, severity, text, url, user_agent, viewport, console_logs, attachments,
    component_target, metadata, submitted_mode, external_user_id, email, submitter_name, user_context, notify_email_sealed, created_at, updated_at,
    spam_score, spam_reasons, spam_marked_at, redactions)
  VALUES ($1, $2, $3, 'received', $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $19, $18, $18, $20, $21, $18, $22)`
// The bulk step's rows (see `plainSubmissions`): one array per column, $18 the time of all.
const INSERT_FEEDBACK_MANY = `INSERT INTO feedback (id, org_id, app_id, status, severity, text, url, user_agent, viewport, console_logs, attachments,
    component_target, metadata, submitted_mode, external_user_id, email, submitter_name, user_context, notify_email_sealed, created_at, updated_at)
  SELECT id, org_id, app_id, 'received', severity, text, url, user_agent, viewport, console_logs, attachments,
    component_target, metadata, submitted_mode, external_user_id, email, submitter_name, user_context, notify_email_sealed, $18::bigint, $18::bigint
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[],
    $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::text[], $17::text[], $19::text[]) WITH ORDINALITY
    AS t(id, org_id, app_id, severity, text, url, user_agent, viewport, console_logs, attachments,
      component_target, metadata, submitted_mode, external_user_id, email, submitter_name, user_context, notify_email_sealed, ord)
  ORDER BY ord`
/** A draft's columns in INSERT_FEEDBACK_MANY's order, after the id. */
const DRAFT_COLUMNS = [
  'orgId', 'appId', 'severity', 'text', 'url', 'userAgent', 'viewport', 'consoleLogs', 'attachments', 'componentTarget', 'metadata',
  'submittedMode', 'externalUserId', 'email', 'submitterName', 'userContext',
] as const satisfies readonly (keyof ReportDraft)[]
const IDEMPOTENCY_ROW = `SELECT request_hash AS "requestHash", status_code AS "statusCode", response_body AS "responseBody", created_at AS "createdAt"
  FROM idempotency_keys WHERE app_id = $1 AND key = $2`
// An expired row is replaced (the SQLite side's upsert); a live one another transaction stored first stays.
const SAVE_IDEMPOTENCY = `INSERT INTO idempotency_keys (app_id, key, request_hash, status_code, response_body, created_at) VALUES ($1, $2, $3, $4, $5, $6)
  ON CONFLICT (app_id, key) DO UPDATE SET request_hash = excluded.request_hash, status_code = excluded.status_code,
    response_body = excluded.response_body, created_at = excluded.created_at`
// Takes the key's row lock before the verdict: a concurrent first use of the key waits here for the winner.
// The Org's event counter ($3) is locked first, in the same round trip (the INSERT reads the CTE's row, so
// the CTE runs first): the report's event bumps it anyway, and a key's row locked before its Org's counter
// deadlocked with another node's batch holding that counter and waiting for the key (db/pg/group-commit.ts).
const CLAIM_KEY = `WITH counter AS (INSERT INTO event_counters (org_id, last_seq) VALUES ($3, 0)
    ON CONFLICT (org_id) DO UPDATE SET last_seq = event_counters.last_seq RETURNING org_id)
  INSERT INTO idempotency_keys (app_id, key, request_hash, status_code, response_body, created_at) SELECT $1, $2, '', 0, '', 0 FROM counter
  ON CONFLICT (app_id, key) DO NOTHING`

/** The list page's SQL for one filter combination; the values in `params`, numbered as pushed. */
function listQuery(f: ListFilter): { text: string; params: unknown[] } {
  const params: unknown[] = [f.orgId]
  const conds = ['org_id = $1']
  if (f.appId) conds.push(`app_id = $${params.push(f.appId)}`)
  if (f.status) conds.push(`status = $${params.push(f.status)}`)
  if (f.cursor) conds.push(`id < $${params.push(f.cursor)}`)
  if (!f.includeDuplicates) conds.push('duplicate_of_id IS NULL')
  const spam = spamListCondition(f.spam)
  if (spam) conds.push(spam)
  const limit = params.push(f.limit + 1)
  return { text: `SELECT ${LIST_COLUMNS} FROM feedback WHERE ${conds.join(' AND ')} ORDER BY id DESC LIMIT $${limit}`, params }
}

export function createPgFeedbackRepo(storage: PgStorage, lifecycle: PgLifecycle, clock: Clock, committer: PgGroupCommitter): FeedbackRepo {
  const { db, pool } = storage
  const first = <T>(rows: T[]): T | undefined => rows[0]
  const changes = feedbackChangeBodies(lifecycle.bodies, clock)
  const bodies = pgRunner(storage)

  /** The key's verdict under its row lock (the row made, empty, when it is the key's first use). */
  async function verdictOf({ client }: PgWriteTx, orgId: string, appId: string, claim: IdempotencyClaim, now: number): Promise<SubmitOutcome | 'fresh'> {
    await client.query(CLAIM_KEY, [appId, claim.key, orgId])
    const seen = await one<IdempotencyRow>(client, `${IDEMPOTENCY_ROW} FOR UPDATE`, [appId, claim.key])
    // The placeholder this transaction (or an aborted one) made holds no answer: a fresh submission.
    return seen && seen.statusCode !== 0 ? idempotencyVerdict(seen, claim, now) : 'fresh'
  }

  async function store(tx: PgWriteTx, draft: ReportDraft, refKeys: string[], claim: IdempotencyClaim | null): Promise<SubmitOutcome> {
    const now = clock.now()
    if (claim) {
      const verdict = await verdictOf(tx, draft.orgId, draft.appId, claim, now)
      if (verdict !== 'fresh') return verdict
    }
    const id = newId(clock)
    const d = draft
    // The row, its event and its job in one statement (one round trip: see lifecycle `received`).
    const params = [
      id, d.orgId, d.appId, d.severity, d.text, d.url, d.userAgent, d.viewport, d.consoleLogs, d.attachments, d.componentTarget,
      d.metadata, d.submittedMode, d.externalUserId, d.email, d.submitterName, d.userContext, now, d.notifyEmailSealed ?? null,
    ]
    if (d.spam) await lifecycle.receivedAsSpam(tx, { orgId: d.orgId, appId: d.appId, feedbackId: id }, { sql: INSERT_SPAM, params: [...params, d.spam.score, d.spam.reasons, d.spam.redactions] }, d.spam.emitEvent)
    else await lifecycle.received(tx, { orgId: d.orgId, appId: d.appId, feedbackId: id }, { sql: INSERT_FEEDBACK, params })
    await markReferencedPg(tx.client, id, refKeys)
    const result = createdAnswer(id)
    if (claim) await tx.client.query(SAVE_IDEMPOTENCY, [d.appId, claim.key, claim.requestHash, result.status, JSON.stringify(result.body), now])
    return { kind: 'answered', result }
  }

  /**
   * Submissions with no Idempotency-Key and no upload (nearly all of them): the batch's are stored by ONE
   * statement (rows, events, jobs, counters), not one round trip each (group-commit.ts `runBulk`).
   */
  const plainSubmissions: PgBulk<ReportDraft, SubmitOutcome> = {
    async writeMany(tx, drafts) {
      const now = clock.now()
      const ids = drafts.map(() => newId(clock))
      const params: unknown[] = [ids, ...DRAFT_COLUMNS.map((c) => drafts.map((d) => d[c]))]
      params.push(now, drafts.map((d) => d.notifyEmailSealed ?? null))
      const reports = drafts.map((d, i) => ({ orgId: d.orgId, appId: d.appId, feedbackId: ids[i] }))
      await lifecycle.receivedMany(tx, reports, { sql: INSERT_FEEDBACK_MANY, params })
      return ids.map((id) => ({ kind: 'answered' as const, result: createdAnswer(id) }))
    },
  }

  return {
    submit: (draft, refKeys, idempotency) =>
      // Spam (rare) goes the one-by-one way: the bulk statement stores ordinary reports only.
      refKeys.length === 0 && !idempotency && !draft.spam
        ? committer.runBulk(plainSubmissions, draft, [draft.orgId])
        : committer.run((tx) => store(tx, draft, refKeys, idempotency), [draft.orgId]),
    get: async (orgId, id) => first(await db.select().from(feedback).where(and(eq(feedback.orgId, orgId), eq(feedback.id, id)))),
    list: async (f) => {
      const q = listQuery(f)
      // Named: planned once per connection (one text per filter combination, so a handful of names).
      return (await pool.query(prepared(q.text, q.params))).rows as ListRow[]
    },
    hasRepoConnection: async (appId) => (await one(pool, 'SELECT app_id FROM repo_connections WHERE app_id = $1', [appId])) !== undefined,
    batchClosesAt: async (appId) =>
      (await one<{ run_after: number }>(pool, "SELECT run_after FROM jobs WHERE kind = 'batch_release' AND app_id = $1 ORDER BY run_after LIMIT 1", [appId]))?.run_after ?? null,
    duplicatesOf: async (orgId, leadId, limit) =>
      db.select().from(feedback).where(and(eq(feedback.orgId, orgId), eq(feedback.duplicateOfId, leadId))).orderBy(desc(feedback.id)).limit(limit),
    orgOf: async (id) => (await one<{ org_id: string }>(pool, 'SELECT org_id FROM feedback WHERE id = $1', [id]))?.org_id,
    async leadStates(orgId, ids) {
      const out = new Map<string, RootState>()
      if (ids.length > 0) {
        const rows = await many<RootState & { id: string }>(pool, 'SELECT id, status, duplicate_of_id, spam_marked_at FROM feedback WHERE org_id = $1 AND id = ANY($2::text[])', [orgId, ids])
        for (const r of rows) out.set(r.id, { status: r.status, duplicate_of_id: r.duplicate_of_id, spam_marked_at: r.spam_marked_at })
      }
      return out
    },
    // Read and move under the row's lock (src/db/bodies/feedback-changes.ts): a second move of the report
    // waits, then decides on the row the first one left (the FSM, not a lost race).
    customerMove: (orgId, id, to) => bodies.transaction(changes.customerMove(orgId, id, to)),
    resolveByHand: (orgId, id, audit) => bodies.transaction(changes.resolveByHand(orgId, id, audit)),
    setSpam: (orgId, id, change, now) => bodies.transaction(changes.setSpam(orgId, id, change, now)),
    spamCount: async (appId) =>
      (await one<{ n: number }>(pool, 'SELECT COUNT(*)::int AS n FROM (SELECT 1 FROM feedback WHERE app_id = $1 AND spam_marked_at IS NOT NULL LIMIT 100000) c', [appId]))!.n,
  }
}
