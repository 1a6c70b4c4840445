/**
 * The SQLite side of near-duplicate clustering's queries (the port: src/dedup/cluster-repo.ts): the
 * report columns features are built from, an App's newest reports for its similarity index, and the
 * duplicate links and lead summaries. Status is only read here; moves go through the lifecycle, and the
 * events of a cluster change are recorded through the lifecycle's SQLite side in the caller's transaction.
 * Synchronous: the processing step and a batch write many of these in one SQLite transaction.
 */
import type { Database, Statement } from 'bun:sqlite'
import type { CandidateRow, ClusterRow, LeadSummary, MergeWhy, RootState, StoredDecision } from '../../dedup/cluster-repo'
import type { Suggestion } from '../../dedup/clusterer'
import type { Decision } from '../../dedup/learn'
import type { CalibrationSnapshot } from '../../dedup/calibrate'
import type { SqliteLifecycle } from './lifecycle'
import type { SyncClusterRepo } from '../../dedup/store-sides'
import type { EventPayloads } from '../../lifecycle/event-types'

export function createSqliteClusterRepo(sqlite: Database, lifecycle?: SqliteLifecycle): SyncClusterRepo {
  const cols = 'id, org_id, app_id, status, version, text, url, component_target, console_logs, duplicate_of_id, merge_locked, redactions, created_at'
  // A single report also carries its triage columns (its suggestion, rejected leads, merge score).
  const getRow: Statement = sqlite.query(`SELECT ${cols}, rejected_lead_ids, suggested_lead_id, suggested_score, merge_score FROM feedback WHERE id = ?`)
  // A ranking's candidates: what ranking and the merge rules read (console logs and the component, the
  // largest columns, only feed features, which the similarity index already holds).
  const getRows: Statement = sqlite.query(
    'SELECT id, org_id, app_id, status, version, text, url, duplicate_of_id, merge_locked, redactions FROM feedback WHERE id IN (SELECT value FROM json_each(?))',
  )
  const rootState: Statement = sqlite.query('SELECT status, duplicate_of_id, spam_marked_at FROM feedback WHERE id = ?')
  // The newest clustered reports of the App, oldest first (postings are walked newest-first from their end).
  // A report whose `process` job is still queued is not clustered yet, even when it is sanitized already
  // (worker/sanitize-ahead.ts): it joins the index when its job clusters it, not as a lead of its own.
  const loadApp: Statement = sqlite.query(
    `SELECT * FROM (SELECT ${cols} FROM feedback f WHERE app_id = ?1 AND redactions IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.feedback_id = f.id AND +j.kind = 'process') ORDER BY id DESC LIMIT ?2) ORDER BY id`,
  )
  // A duplicate loses its suggestion and keeps why it was merged, in the statement that makes it one; it
  // shows its lead's pull request from the moment it joins (issue 36.3: a report attached while the lead's
  // PR was open kept none, and its reporter's mail had no link). Every way of attaching comes here.
  const setDuplicate: Statement = sqlite.query(
    `UPDATE feedback SET duplicate_of_id = ?1, merge_locked = ?2, merge_score = ?3, merge_reason = ?4, suggested_lead_id = NULL, suggested_score = NULL,
       suggested_reason = NULL, theme = NULL, consolidated_text = NULL, duplicate_count = 0, last_duplicate_at = NULL,
       merge_request_url = (SELECT l.merge_request_url FROM feedback l WHERE l.id = ?1), version = version + 1, updated_at = ?5 WHERE id = ?6`,
  )
  const setSuggestion: Statement = sqlite.query(
    'UPDATE feedback SET suggested_lead_id = ?, suggested_score = ?, suggested_reason = ?, version = version + 1, updated_at = ? WHERE id = ?',
  )
  // A rejection: the suggestion goes, its lead joins the rejected ones (each once).
  const rejectSuggestion: Statement = sqlite.query(
    `UPDATE feedback SET rejected_lead_ids = (SELECT json_group_array(value) FROM (SELECT value FROM json_each(COALESCE(rejected_lead_ids, '[]'))
       UNION SELECT ?)), suggested_lead_id = NULL, suggested_score = NULL, suggested_reason = NULL, version = version + 1, updated_at = ?
     WHERE id = ? AND suggested_lead_id IS NOT NULL`,
  )
  const insertDecision: Statement = sqlite.query(
    'INSERT INTO triage_decisions (org_id, app_id, feedback_id, lead_id, kind, score, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
  )
  const decisions: Statement = sqlite.query('SELECT kind, score FROM triage_decisions WHERE app_id = ? ORDER BY id DESC LIMIT ?')
  const decisionCounts: Statement = sqlite.query('SELECT kind, COUNT(*) AS n FROM triage_decisions WHERE app_id = ? GROUP BY kind')
  const deleteDecisions: Statement = sqlite.query('DELETE FROM triage_decisions WHERE app_id = ?')
  const readCalibration: Statement = sqlite.query('SELECT scored, median, arrival_locality AS locality FROM app_calibration WHERE app_id = ?')
  const saveCalibration: Statement = sqlite.query(
    'INSERT INTO app_calibration (app_id, scored, median, arrival_locality, updated_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (app_id) DO UPDATE SET scored = excluded.scored, median = excluded.median, arrival_locality = excluded.arrival_locality, updated_at = excluded.updated_at',
  )
  const moveDuplicates: Statement = sqlite.query(
    'UPDATE feedback SET duplicate_of_id = ?1, merge_request_url = (SELECT l.merge_request_url FROM feedback l WHERE l.id = ?1), version = version + 1, updated_at = ?2 WHERE duplicate_of_id = ?3',
  )
  const duplicateIds: Statement = sqlite.query('SELECT id FROM feedback WHERE duplicate_of_id = ?')
  const dupTexts: Statement = sqlite.query('SELECT id, text FROM feedback WHERE duplicate_of_id = ? AND redactions IS NOT NULL ORDER BY id DESC LIMIT 200')
  const dupStats: Statement = sqlite.query('SELECT COUNT(*) AS n, MAX(created_at) AS last, MAX(id) AS maxId FROM feedback WHERE duplicate_of_id = ?')
  const rawDuplicate: Statement = sqlite.query('SELECT 1 FROM feedback WHERE duplicate_of_id = ? AND redactions IS NULL LIMIT 1')
  const saveLead: Statement = sqlite.query(
    'UPDATE feedback SET duplicate_count = ?, last_duplicate_at = ?, theme = ?, consolidated_text = ?, version = version + 1, updated_at = ? WHERE id = ?',
  )
  const setUnmerged: Statement = sqlite.query(
    // The lead's pull request leaves with it: an unmerged report is a lead of its own, without a PR yet.
    'UPDATE feedback SET duplicate_of_id = NULL, merge_locked = 1, merge_score = NULL, merge_reason = NULL, merge_request_url = NULL, version = version + 1, updated_at = ? WHERE id = ?',
  )

  return {
    get: (id: string): ClusterRow | null => getRow.get(id) as ClusterRow | null,
    /** A lead-to-be's status and link, or null when the report is gone. */
    rootState: (id: string): RootState | null => rootState.get(id) as RootState | null,
    /** A ranking's candidates in one statement, by id (without their largest columns); missing ids are absent. */
    getCandidates(ids: string[]): Map<string, CandidateRow> {
      const out = new Map<string, CandidateRow>()
      if (ids.length > 0) for (const r of getRows.all(JSON.stringify(ids)) as CandidateRow[]) out.set(r.id, r)
      return out
    },
    /** The App's newest `limit` sanitized reports, oldest first, streamed. */
    iterateApp: (appId: string, limit: number): IterableIterator<ClusterRow> => loadApp.iterate(appId, limit) as IterableIterator<ClusterRow>,
    allOfApp: (appId: string, limit: number): ClusterRow[] => loadApp.all(appId, limit) as ClusterRow[],
    duplicateIds: (leadId: string): string[] => (duplicateIds.all(leadId) as { id: string }[]).map((d) => d.id),
    /** The newest sanitized duplicates (at most 200), newest first: ids and texts in step. */
    duplicateTexts(leadId: string): { ids: string[]; texts: string[] } {
      const rows = dupTexts.values(leadId) as [string, string][]
      const ids: string[] = new Array(rows.length)
      const texts: string[] = new Array(rows.length)
      for (let i = 0; i < rows.length; i++) {
        ids[i] = rows[i][0]
        texts[i] = rows[i][1]
      }
      return { ids, texts }
    },
    /** How many duplicates the lead has, the newest one's time and the greatest duplicate id (from the index alone). */
    duplicateStats: (leadId: string): { n: number; last: number | null; maxId: string | null } =>
      dupStats.get(leadId) as { n: number; last: number | null; maxId: string | null },
    /** True when a duplicate of the lead is not sanitized yet (one merged raw before 0006). */
    hasRawDuplicate: (leadId: string): boolean => rawDuplicate.get(leadId) !== null,
    saveLead: (leadId: string, s: LeadSummary, now: number) => saveLead.run(s.duplicateCount, s.lastDuplicateAt, s.theme, s.consolidatedText, now, leadId),
    /**
     * Makes `id` a duplicate of `leadId` (its own summary and suggestion are cleared); `locked` keeps
     * clustering off it; `why`: the merge's score and reason.
     */
    setDuplicate: (id: string, leadId: string, locked: boolean, why: MergeWhy, now: number) => setDuplicate.run(leadId, locked ? 1 : 0, why.score, why.reason, now, id),
    /** Stores a report's suggested lead (null: none). */
    setSuggestion: (id: string, s: Suggestion | null, now: number) => setSuggestion.run(s?.leadId ?? null, s?.score ?? null, s?.reason ?? null, now, id),
    /** Clears the report's suggestion and remembers `leadId` (its lead as served) as rejected; false when it had none. */
    rejectSuggestion: (id: string, leadId: string, now: number): boolean => rejectSuggestion.run(leadId, now, id).changes > 0,
    /** Stores a person's decision about a scored pair (learn.ts). */
    recordDecision: (scope: { orgId: string; appId: string }, d: StoredDecision, now: number) =>
      insertDecision.run(scope.orgId, scope.appId, d.feedbackId, d.leadId, d.kind, d.score, now),
    /** The App's newest decisions (at most `limit`). */
    decisions: (appId: string, limit: number): Decision[] => decisions.all(appId, limit) as Decision[],
    /** The App's calibration as the clustering process last stored it, or null (none yet). */
    calibration: (appId: string): CalibrationSnapshot | null => (readCalibration.get(appId) as CalibrationSnapshot | null) ?? null,
    /** Stores the App's calibration, in the caller's transaction (with the verdict that changed it). */
    saveCalibration: (appId: string, s: CalibrationSnapshot, now: number) => void saveCalibration.run(appId, s.scored, s.median, s.locality, now),
    /** Deletes every decision of the App (a reset of what its bars learned), in the caller's transaction; how many of each kind went. */
    clearDecisions(appId: string): { kind: string; n: number }[] {
      const counts = decisionCounts.all(appId) as { kind: string; n: number }[]
      deleteDecisions.run(appId)
      return counts
    },
    /** Re-points every duplicate of `fromLeadId` at `toLeadId`. */
    moveDuplicates: (fromLeadId: string, toLeadId: string, now: number) => moveDuplicates.run(toLeadId, now, fromLeadId),
    /** Makes a duplicate a lead again, locked against automatic clustering. */
    setUnmerged: (id: string, now: number) => setUnmerged.run(now, id),
    /**
     * Runs `work` (one cluster change: rows, events, jobs) in one IMMEDIATE transaction (it reads before it
     * writes: see lifecycle.move), or as a savepoint of the caller's (a processing transaction, a batch).
     */
    transaction: <T>(work: () => T): T => sqlite.transaction(work).immediate(),
    /** Records `feedback.duplicate_attached` in the caller's transaction. */
    recordAttached(scope: { orgId: string; appId: string }, data: EventPayloads['feedback.duplicate_attached']): void {
      lifecycleSide().record(scope, 'feedback.duplicate_attached', data)
    },
    /** Records `feedback.duplicate_suggested` in the caller's transaction. */
    recordSuggested(scope: { orgId: string; appId: string }, data: EventPayloads['feedback.duplicate_suggested']): void {
      lifecycleSide().record(scope, 'feedback.duplicate_suggested', data)
    },
    /** Records `feedback.unmerged` in the caller's transaction. */
    recordUnmerged(scope: { orgId: string; appId: string }, data: EventPayloads['feedback.unmerged']): void {
      lifecycleSide().record(scope, 'feedback.unmerged', data)
    },
    /** Queues the report's `process` job in the caller's transaction (an unmerged report moves on as a lead). */
    enqueueProcess(feedbackId: string): void {
      lifecycleSide().enqueueProcessOf(feedbackId)
    },
  }

  function lifecycleSide(): SqliteLifecycle {
    if (!lifecycle) throw new Error('this cluster repo records no events: build it with the lifecycle\'s SQLite side')
    return lifecycle
  }
}
export type SqliteClusterRepo = SyncClusterRepo
