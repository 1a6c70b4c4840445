/**
 * The PostgreSQL side of near-duplicate clustering's queries (the port: src/dedup/cluster-repo.ts). The
 * reads of a verdict go to the pool just before it is computed (src/dedup/pg-service.ts); every change
 * to a cluster joins one transaction (a PgTx) with its events, through the lifecycle's PostgreSQL side.
 * Ids are compared byte-wise (`COLLATE "C"`), as SQLite does, wherever their order picks rows.
 */
import type { CandidateRow, ClusterRow, LeadSummary, MergeWhy, RootState, StoredDecision } from '../../dedup/cluster-repo'
import type { Suggestion } from '../../dedup/clusterer'
import type { Decision } from '../../dedup/learn'
import type { CalibrationSnapshot } from '../../dedup/calibrate'
import type { EventPayloads } from '../../lifecycle/event-types'
import type { PgLifecycle, PgTx } from './lifecycle'
import type { LeadState, TxClusterRepo } from '../../dedup/store-sides'
import { exec, many, one, type PgQueryable, type PgStorage } from './storage'
import { withTransaction } from './transaction'

const COLS = `id, org_id, app_id, status, version, text, url, component_target, console_logs, duplicate_of_id,
  merge_locked::int AS merge_locked, redactions, created_at, rejected_lead_ids, suggested_lead_id, suggested_score, merge_score, spam_marked_at`

// As duplicateStats and duplicateTexts, for many leads at once (the processing engine's batch): the window as
// its distinct texts in the order they first occur newest first (what a summary reads), not its up to 200 texts.
const LEAD_STATES = `SELECT l.id, l.app_id, l.text, l.redactions IS NOT NULL AS sanitized, s.n, s.last, w.distinct_texts, w.window_length
  FROM feedback l
  CROSS JOIN LATERAL (SELECT COUNT(*)::int AS n, MAX(d.created_at) AS last FROM feedback d WHERE d.duplicate_of_id = l.id) s
  CROSS JOIN LATERAL (SELECT COALESCE(array_agg(g.text ORDER BY g.newest DESC), '{}') AS distinct_texts, COALESCE(sum(g.k), 0)::int AS window_length
    FROM (SELECT t.text, max(t.id COLLATE "C") AS newest, count(*) AS k
      FROM (SELECT d.id, d.text FROM feedback d WHERE d.duplicate_of_id = l.id AND d.redactions IS NOT NULL ORDER BY d.id COLLATE "C" DESC LIMIT 200) t
      GROUP BY t.text) g) w
  WHERE l.id = ANY($1::text[])`
const SAVE_LEADS = `UPDATE feedback f SET duplicate_count = u.n, last_duplicate_at = u.last, theme = u.theme, consolidated_text = u.consolidated,
    version = f.version + 1, updated_at = $6
  FROM unnest($1::text[], $2::int[], $3::bigint[], $4::text[], $5::text[]) AS u(id, n, last, theme, consolidated) WHERE f.id = u.id`

export function createPgClusterRepo(storage: PgStorage, lifecycle: PgLifecycle): TxClusterRepo<PgTx> {
  const { pool } = storage
  return {
    get: async (id: string, tx?: PgTx): Promise<ClusterRow | null> => (await one<ClusterRow>(tx?.client ?? pool, `SELECT ${COLS} FROM feedback WHERE id = $1`, [id])) ?? null,
    /** Full rows by id, in one statement; missing ids are absent. */
    async rows(ids: string[]): Promise<Map<string, ClusterRow>> {
      const out = new Map<string, ClusterRow>()
      if (ids.length > 0) for (const r of await many<ClusterRow>(pool, `SELECT ${COLS} FROM feedback WHERE id = ANY($1::text[]) ORDER BY id`, [ids])) out.set(r.id, r)
      return out
    },
    /**
     * The App's newest `limit` clustered reports, oldest first. A report whose `process` job is still
     * queued is not clustered yet: it joins the index when its job clusters it.
     *
     * Without the server pool's statement_timeout (FIXLOOP_PG_STATEMENT_TIMEOUT_SECONDS): the read grows
     * with the App by design (up to 100,000 reports with their console logs, ~70 MB/s), and a big App's
     * passed 20 s; ended by PostgreSQL (57014, unavailable), the index was never built and every report
     * of the App was deferred again and again. One statement as before: one snapshot of the App.
     */
    loadApp: (appId: string, limit: number): Promise<ClusterRow[]> =>
      withTransaction(pool, async (client) => {
        await client.query('SET LOCAL statement_timeout = 0')
        return many<ClusterRow>(
          client,
          `SELECT * FROM (SELECT ${COLS} FROM feedback f WHERE app_id = $1 AND redactions IS NOT NULL
             AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.feedback_id = f.id AND j.kind = 'process') ORDER BY id COLLATE "C" DESC LIMIT $2) t ORDER BY id COLLATE "C"`,
          [appId, limit],
        )
      }),
    /** A report's row, locked until the transaction ends (a concurrent change of its cluster waits). */
    lock: async (tx: PgTx, id: string): Promise<ClusterRow | null> => (await one<ClusterRow>(tx.client, `SELECT ${COLS} FROM feedback WHERE id = $1 FOR UPDATE`, [id])) ?? null,
    /** A lead-to-be's status and link, locked: it cannot be archived or merged away before this commit. */
    lockRoot: async (tx: PgTx, id: string): Promise<RootState | null> =>
      (await one<RootState>(tx.client, 'SELECT status, duplicate_of_id, spam_marked_at FROM feedback WHERE id = $1 FOR UPDATE', [id])) ?? null,
    lockForTriage: async (tx: PgTx, id: string, leadId: string = id): Promise<void> => {
      // One merge or unmerge by hand per App at a time (a transaction-scoped advisory lock, released at commit): the
      // rows below are read before the lock waits, so a merge that committed meanwhile could add a
      // duplicate this one then moves, locked out of order.
      await many(tx.client, `SELECT pg_advisory_xact_lock(hashtextextended('fixloop.merge:' || app_id, 0)) FROM feedback WHERE id = $1`, [id])
      // ORDER BY before FOR UPDATE: the rows are locked in the order they are sorted, so every merge takes them in one order.
      await many(
        tx.client,
        `SELECT id FROM feedback WHERE id = $1 OR id = $2 OR duplicate_of_id = $1 OR id = (SELECT duplicate_of_id FROM feedback WHERE id = $1)
           ORDER BY id COLLATE "C" FOR UPDATE`,
        [id, leadId],
      )
    },
    duplicateIds: async (tx: PgTx, leadId: string): Promise<string[]> =>
      (await many<{ id: string }>(tx.client, 'SELECT id FROM feedback WHERE duplicate_of_id = $1 ORDER BY id COLLATE "C"', [leadId])).map((d) => d.id),
    /** The newest sanitized duplicates (at most 200), newest first. */
    duplicateTexts: async (tx: PgTx, leadId: string): Promise<string[]> =>
      (await many<{ text: string }>(tx.client, 'SELECT text FROM feedback WHERE duplicate_of_id = $1 AND redactions IS NOT NULL ORDER BY id COLLATE "C" DESC LIMIT 200', [leadId])).map((d) => d.text),
    duplicateStats: async (tx: PgTx, leadId: string): Promise<{ n: number; last: number | null }> =>
      (await one<{ n: number; last: number | null }>(tx.client, 'SELECT COUNT(*) AS n, MAX(created_at) AS last FROM feedback WHERE duplicate_of_id = $1', [leadId]))!,
    saveLead: (tx: PgTx, leadId: string, s: LeadSummary, now: number) =>
      exec(
        tx.client,
        'UPDATE feedback SET duplicate_count = $1, last_duplicate_at = $2, theme = $3, consolidated_text = $4, version = version + 1, updated_at = $5 WHERE id = $6',
        [s.duplicateCount, s.lastDuplicateAt, s.theme, s.consolidatedText, now, leadId],
      ),
    /**
     * Makes `id` a duplicate of `leadId` (its own summary and suggestion are cleared); `locked` keeps
     * clustering off it; `why`: the merge's score and reason.
     */
    setDuplicate: (tx: PgTx, id: string, leadId: string, locked: boolean, why: MergeWhy, now: number) =>
      exec(
        tx.client,
        `UPDATE feedback SET duplicate_of_id = $1, merge_locked = $2, merge_score = $3, merge_reason = $4, suggested_lead_id = NULL, suggested_score = NULL,
           suggested_reason = NULL, theme = NULL, consolidated_text = NULL, duplicate_count = 0, last_duplicate_at = NULL,
           merge_request_url = (SELECT l.merge_request_url FROM feedback l WHERE l.id = $1), version = version + 1, updated_at = $5 WHERE id = $6`,
        [leadId, locked, why.score, why.reason, now, id],
      ),
    /** Stores a report's suggested lead (null: none). */
    setSuggestion: (tx: PgTx, id: string, s: Suggestion | null, now: number) =>
      exec(tx.client, 'UPDATE feedback SET suggested_lead_id = $1, suggested_score = $2, suggested_reason = $3, version = version + 1, updated_at = $4 WHERE id = $5', [
        s?.leadId ?? null,
        s?.score ?? null,
        s?.reason ?? null,
        now,
        id,
      ]),
    /** Clears the report's suggestion and remembers `leadId` (its lead as served) as rejected; false when it had none. */
    async rejectSuggestion(tx: PgTx, id: string, leadId: string, now: number): Promise<boolean> {
      const r = await tx.client.query(
        `UPDATE feedback SET rejected_lead_ids = (SELECT json_agg(DISTINCT v)::text FROM (SELECT json_array_elements_text(COALESCE(rejected_lead_ids, '[]')::json) AS v
           UNION SELECT $1::text) u), suggested_lead_id = NULL, suggested_score = NULL, suggested_reason = NULL, version = version + 1, updated_at = $2
         WHERE id = $3 AND suggested_lead_id IS NOT NULL`,
        [leadId, now, id],
      )
      return (r.rowCount ?? 0) > 0
    },
    /** Stores a person's decision about a scored pair (learn.ts). */
    recordDecision: (tx: PgTx, scope: { orgId: string; appId: string }, d: StoredDecision, now: number) =>
      exec(tx.client, 'INSERT INTO triage_decisions (org_id, app_id, feedback_id, lead_id, kind, score, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
        scope.orgId,
        scope.appId,
        d.feedbackId,
        d.leadId,
        d.kind,
        d.score,
        now,
      ]),
    /** The App's calibration as the clustering process last stored it, or null (none yet). */
    calibration: async (appId: string): Promise<CalibrationSnapshot | null> => (await one<CalibrationSnapshot>(pool, 'SELECT scored, median, arrival_locality AS locality FROM app_calibration WHERE app_id = $1', [appId])) ?? null,
    /** Stores the App's calibration, in `tx` (with the verdict that changed it). */
    saveCalibration: (tx: PgTx, appId: string, s: CalibrationSnapshot, now: number) =>
      exec(
        tx.client,
        'INSERT INTO app_calibration (app_id, scored, median, arrival_locality, updated_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (app_id) DO UPDATE SET scored = excluded.scored, median = excluded.median, arrival_locality = excluded.arrival_locality, updated_at = excluded.updated_at',
        [appId, s.scored, s.median, s.locality, now],
      ),
    /** Deletes every decision of the App (a reset of what its bars learned), in `tx`; how many of each kind went. */
    async clearDecisions(tx: PgTx, appId: string): Promise<{ kind: string; n: number }[]> {
      const counts = await many<{ kind: string; n: string | number }>(tx.client, 'SELECT kind, COUNT(*) AS n FROM triage_decisions WHERE app_id = $1 GROUP BY kind', [appId])
      await exec(tx.client, 'DELETE FROM triage_decisions WHERE app_id = $1', [appId])
      return counts.map((c) => ({ kind: c.kind, n: Number(c.n) }))
    },
    /** The App's newest decisions (at most `limit`), from the pool: read before a verdict when the App's lesson is stale. */
    decisions: (appId: string, limit: number): Promise<Decision[]> =>
      many<Decision>(pool, 'SELECT kind, score FROM triage_decisions WHERE app_id = $1 ORDER BY id DESC LIMIT $2', [appId, limit]),
    recordSuggested: (tx: PgTx, scope: { orgId: string; appId: string }, data: EventPayloads['feedback.duplicate_suggested']) =>
      lifecycle.record(tx, scope, 'feedback.duplicate_suggested', data),
    /** Re-points every duplicate of `fromLeadId` at `toLeadId`. */
    moveDuplicates: (tx: PgTx, fromLeadId: string, toLeadId: string, now: number) =>
      exec(
        tx.client,
        'UPDATE feedback SET duplicate_of_id = $1, merge_request_url = (SELECT l.merge_request_url FROM feedback l WHERE l.id = $1), version = version + 1, updated_at = $2 WHERE duplicate_of_id = $3',
        [toLeadId, now, fromLeadId],
      ),
    /** Makes a duplicate a lead again, locked against automatic clustering. */
    setUnmerged: (tx: PgTx, id: string, now: number) =>
      exec(tx.client, 'UPDATE feedback SET duplicate_of_id = NULL, merge_locked = TRUE, merge_score = NULL, merge_reason = NULL, merge_request_url = NULL, version = version + 1, updated_at = $1 WHERE id = $2', [now, id]),
    recordAttached: (tx: PgTx, scope: { orgId: string; appId: string }, data: EventPayloads['feedback.duplicate_attached']) =>
      lifecycle.record(tx, scope, 'feedback.duplicate_attached', data),
    recordUnmerged: (tx: PgTx, scope: { orgId: string; appId: string }, data: EventPayloads['feedback.unmerged']) => lifecycle.record(tx, scope, 'feedback.unmerged', data),
    enqueueProcess: (tx: PgTx, feedbackId: string) => lifecycle.enqueueProcessOf(tx, feedbackId),
    /** Several leads' duplicate counts, newest duplicate time and newest sanitized texts (as duplicateStats and duplicateTexts), in one statement. */
    async leadStates(tx: PgTx, leadIds: string[]): Promise<Map<string, LeadState>> {
      const out = new Map<string, LeadState>()
      if (leadIds.length === 0) return out
      type Found = { id: string; app_id: string; text: string; sanitized: boolean; n: number; last: number | null; distinct_texts: string[]; window_length: number }
      for (const r of await many<Found>(tx.client, LEAD_STATES, [leadIds])) {
        out.set(r.id, { appId: r.app_id, text: r.text, sanitized: r.sanitized, n: Number(r.n), last: r.last === null ? null : Number(r.last), distinct: r.distinct_texts, windowLength: Number(r.window_length) })
      }
      return out
    },
    /** Several leads' summaries written in one statement. */
    async saveLeads(tx: PgTx, leads: { id: string; summary: LeadSummary }[], now: number): Promise<void> {
      if (leads.length === 0) return
      await exec(tx.client, SAVE_LEADS, [
        leads.map((l) => l.id), leads.map((l) => l.summary.duplicateCount), leads.map((l) => l.summary.lastDuplicateAt),
        leads.map((l) => l.summary.theme), leads.map((l) => l.summary.consolidatedText), now,
      ])
    },
    /** One transaction of a cluster change. */
    transaction: <T>(work: (tx: PgTx) => Promise<T>): Promise<T> => storage.tx((client, _db, onCommit) => work({ client, onCommit })),
  }
}
export type PgClusterRepo = TxClusterRepo<PgTx>
export type { CandidateRow }
