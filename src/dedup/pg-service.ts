/**
 * Near-duplicate clustering on PostgreSQL: the same indexes, rankings and verdicts as the SQLite service
 * (src/dedup/clusterer.ts, shared), the same rows and events. The App indexes live in the process
 * whose worker processes reports (one node for now: this process runs every job kind).
 *
 * A verdict is computed synchronously over a snapshot: the rows it reads (the report, its nearest
 * candidates and their leads: `clusterer.shortlist`) are read in one statement just before. The write
 * then checks in its transaction what the verdict assumed: the lead is read `FOR UPDATE` and must still
 * take duplicates, else nothing is written and the caller clusters the report again.
 */
import type { Clock } from '../core/clock'
import type { PgStore } from '../db/pg/store'
import { createPgClusterRepo } from '../db/pg/dedup'
import type { PgTx } from '../db/pg/lifecycle'
import type { CandidateRow, ClusterRow as Row, MergeWhy, RootState } from './cluster-repo'
import { createClusterer, takesDuplicates, MAX_INDEXED_PER_APP, type ClusterReads, type Sanitized, type SimilarEntry, type Verdict } from './clusterer'
import { consolidate, themeOf } from './consolidate'
import { DEFAULT_THRESHOLDS, type Thresholds } from './decide'
import { decisionCounts, LEARNING, type DecisionKind } from './learn'
import { writeAuditPg } from '../db/pg/audit-writer'
import type { AuditEntry } from '../modules/audit/entry'
import { confirmedSuggestion, currentLeadOf, MERGED_BY_HAND, triageStateOf, whyAutomatic } from './suggestions'

export function createPgClusterService(store: PgStore, clock: Clock, baseThresholds: Thresholds = DEFAULT_THRESHOLDS) {
  const { storage } = store
  const repo = createPgClusterRepo(storage, store.sides.lifecycle)
  /** The rows the computation under way may read (see the file's comment), and an App's rows while its index is built. */
  let snapshot: Map<string, Row> = new Map()
  const seeds = new Map<string, Map<string, Row>>()
  const rowOf = (id: string): Row | null => {
    const r = snapshot.get(id)
    if (r) return r
    for (const seed of seeds.values()) {
      const s = seed.get(id)
      if (s) return s
    }
    return null
  }
  const reads: ClusterReads = {
    get: rowOf,
    rootState: (id) => {
      const r = rowOf(id)
      return r && { status: r.status, duplicate_of_id: r.duplicate_of_id, spam_marked_at: r.spam_marked_at ?? null }
    },
    getCandidates(ids) {
      const out = new Map<string, CandidateRow>()
      for (const id of ids) {
        const r = rowOf(id)
        if (r) out.set(id, r)
      }
      return out
    },
    allOfApp() {
      throw new Error('on PostgreSQL an App index is built by prepare() before it is used')
    },
  }
  const core = createClusterer(reads, baseThresholds)

  function prepare(appId: string): Promise<void> {
    return core.prepare(appId, async () => {
      const rows = await repo.loadApp(appId, MAX_INDEXED_PER_APP)
      // The build seeds its calibration from these rows (the text cache may not hold them all).
      seeds.set(appId, new Map(rows.map((r) => [r.id, r])))
      return rows
    }).finally(() => seeds.delete(appId))
  }

  /** Sets the index's lead links to what `rows` say; true when one differed. */
  function correctLinks(appId: string, rows: Map<string, Row>): boolean {
    const index = core.preparedIndex(appId)
    if (!index) return false
    let changed = false
    for (const row of rows.values()) {
      if (row.app_id !== appId || index.doc(row.id) === undefined) continue
      if (index.leadOf(row.id) !== row.duplicate_of_id) {
        index.setLead(row.id, row.duplicate_of_id)
        changed = true
      }
    }
    return changed
  }

  /**
   * Reads the App's triage decisions when its lesson is stale (older than LESSON_TTL_MS, or dropped by a
   * decision recorded on this node): a decision recorded on another node moves this node's bars within
   * about a second, and one recorded here before the next verdict.
   */
  async function freshLesson(appId: string): Promise<void> {
    if (core.lessonStale(appId)) core.learnFrom(appId, await repo.decisions(appId, LEARNING.window))
  }

  /** Runs `compute` over a snapshot of `id`'s row (`override`: its sanitized columns) and every row its ranking reads. */
  async function withSnapshot<T>(id: string, limit: number | undefined, compute: () => T, override?: Sanitized): Promise<T | null> {
    const stored = await repo.get(id)
    if (!stored) return null
    await prepare(stored.app_id)
    await freshLesson(stored.app_id)
    const r: Row = override ? { ...stored, ...override, status: 'sanitized' } : stored
    let rows = await repo.rows(core.shortlist(r, limit))
    // Cluster mode: another node may have merged or unmerged by hand since this index learned a link
    // (its own index took the change, this one did not). The rows just read are the truth: correct the
    // links they show, and read again once if any changed (the shortlist follows the links).
    if (correctLinks(stored.app_id, rows)) rows = await repo.rows(core.shortlist(r, limit))
    rows.set(id, stored)
    snapshot = rows
    try {
      return compute()
    } finally {
      snapshot = new Map()
    }
  }

  /**
   * Recomputes a lead's count, last duplicate time, theme and consolidated text from its duplicates, in `tx`;
   * returns the count. The lead's row is locked first: two changes of one cluster count one after the other
   * (each counting the other's committed duplicates), never both from the same stale count.
   */
  async function refreshLead(tx: PgTx, leadId: string): Promise<number> {
    const lead = await repo.lock(tx, leadId)
    if (!lead) return 0
    const stats = await repo.duplicateStats(tx, leadId)
    // Never a summary of raw text: a report not sanitized yet has none.
    if (lead.redactions === null) return stats.n
    const window = await repo.duplicateTexts(tx, leadId)
    // Each distinct text once (a burst repeats one text many times); the header counts every one.
    const distinct = [...new Set(window)]
    await repo.saveLead(tx, leadId, { duplicateCount: stats.n, lastDuplicateAt: stats.last, theme: themeOf(lead.text), consolidatedText: consolidate(lead.text, distinct, window.length) }, clock.now())
    return stats.n
  }

  /**
   * Makes `dupId` (and the duplicates it had) duplicates of `leadId` in `tx`; records each attachment.
   * Returns what the index learns once the transaction commits.
   */
  async function attach(tx: PgTx, dupId: string, leadId: string, manual: boolean, why: MergeWhy): Promise<() => void> {
    const now = clock.now()
    // The member, then its lead: every cluster change locks in this order.
    const r = await repo.lock(tx, dupId)
    await repo.lockRoot(tx, leadId)
    const movedIds = await repo.duplicateIds(tx, dupId)
    await repo.setDuplicate(tx, dupId, leadId, manual, why, now)
    // Never chain: the duplicates of the merged item move to the new lead too.
    if (movedIds.length > 0) await repo.moveDuplicates(tx, dupId, leadId, now)
    const duplicateCount = await refreshLead(tx, leadId)
    if (!r) return () => {}
    for (const feedbackId of [dupId, ...movedIds]) {
      await repo.recordAttached(tx, { orgId: r.org_id, appId: r.app_id }, { feedbackId, leadFeedbackId: leadId, duplicateCount, manual, automatic: !manual, score: why.score })
    }
    return () => {
      const index = core.preparedIndex(r.app_id)
      index?.setLead(dupId, leadId)
      for (const id of movedIds) index?.setLead(id, leadId)
    }
  }

  /**
   * A stored suggestion's lead and its lead's lead, read in `tx` (not locked: a merge locks the member,
   * then its target, in that order only), as a lookup for `currentLeadOf`.
   */
  async function rootsOf(tx: PgTx, leadId: string | null): Promise<(id: string) => RootState | null> {
    const states = new Map<string, RootState>()
    if (leadId) {
      const lead = await repo.get(leadId, tx.client)
      if (lead) states.set(leadId, lead)
      if (lead?.duplicate_of_id) {
        const root = await repo.get(lead.duplicate_of_id, tx.client)
        if (root) states.set(lead.duplicate_of_id, root)
      }
    }
    return (id) => states.get(id) ?? null
  }

  return {
    /** Builds the App's index without blocking. */
    prepare,

    /**
     * The verdict for a report that is not a duplicate (`sanitized`: its sanitized columns when they are
     * not stored yet), indexed at once; nothing is written: `applyInTx` writes it, or `dropPlan` undoes it.
     */
    plan: (id: string, sanitized?: Sanitized): Promise<Verdict | null> => withSnapshot(id, undefined, () => core.plan(id, sanitized), sanitized).then((v) => v ?? null),

    /**
     * Writes a planned verdict in the caller's transaction: the lead is locked and must still take the
     * report. `ok` false: nothing was written (the caller rolls back and clusters again). `after`: the
     * index's update, once the transaction commits.
     */
    async applyInTx(tx: PgTx, id: string, verdict: Verdict): Promise<{ ok: boolean; after: () => void }> {
      // The calibrations the verdicts changed, with this verdict (what every reader shows).
      for (const [appId, s] of core.takeCalibrations()) await repo.saveCalibration(tx, appId, s, clock.now())
      if (!verdict.leadId) {
        await refreshLead(tx, id)
        const s = verdict.suggestion
        if (s) {
          const self = await repo.lock(tx, id)
          if (self && !self.duplicate_of_id) {
            await repo.setSuggestion(tx, id, s, clock.now())
            await repo.recordSuggested(tx, { orgId: self.org_id, appId: self.app_id }, { feedbackId: id, leadFeedbackId: s.leadId, score: s.score })
          }
        }
        return { ok: true, after: () => {} }
      }
      const self = await repo.lock(tx, id)
      const lead = await repo.lockRoot(tx, verdict.leadId)
      if (!self || self.duplicate_of_id || self.merge_locked || !takesDuplicates(lead)) return { ok: false, after: () => {} }
      return { ok: true, after: await attach(tx, id, verdict.leadId, false, whyAutomatic(verdict)) }
    },

    /** A planned report that was not written as planned: out of the index. */
    dropPlan: (id: string, appId: string): void => core.dropPlan(id, appId),

    /** Other reports of the same App as `id`, best first. */
    similar: async (id: string, limit: number): Promise<SimilarEntry[]> => (await withSnapshot(id, limit, () => core.similar(id, limit))) ?? [],

    /** Makes `id` (and its duplicates) duplicates of `leadId`, locked against automatic clustering. */
    async merge(id: string, leadId: string): Promise<void> {
      let learned: string | null = null
      const after = await repo.transaction(async (tx) => {
        const r = await repo.lock(tx, id)
        const formerLead = r?.duplicate_of_id
        // The suggested lead (as served: followed to its current lead) confirmed: a decision to learn from.
        const confirmed = r ? confirmedSuggestion(r, leadId, await rootsOf(tx, r.suggested_lead_id)) : null
        const indexed = await attach(tx, id, leadId, true, confirmed ? { score: confirmed.score, reason: 'confirmed suggestion' } : MERGED_BY_HAND)
        if (formerLead && formerLead !== leadId) await refreshLead(tx, formerLead)
        if (r && confirmed) {
          await repo.recordDecision(tx, { orgId: r.org_id, appId: r.app_id }, { feedbackId: id, leadId, kind: 'confirmed', score: confirmed.score }, clock.now())
          learned = r.app_id
        }
        return indexed
      })
      after()
      if (learned) core.forgetLesson(learned)
    },

    /**
     * Rejects the report's suggestion: it is cleared, its lead (as served) is never suggested for this
     * report again, and the decision is stored for the App's lesson. No suggestion: nothing changes.
     */
    async rejectSuggestion(id: string): Promise<void> {
      const learned = await repo.transaction(async (tx) => {
        const r = await repo.lock(tx, id)
        if (!r || !r.suggested_lead_id || r.suggested_score === null) return null
        const leadId = currentLeadOf(r.suggested_lead_id, await rootsOf(tx, r.suggested_lead_id)) ?? r.suggested_lead_id
        if (!(await repo.rejectSuggestion(tx, id, leadId, clock.now()))) return null
        await repo.recordDecision(tx, { orgId: r.org_id, appId: r.app_id }, { feedbackId: id, leadId, kind: 'rejected', score: r.suggested_score }, clock.now())
        return r.app_id
      })
      if (learned) core.forgetLesson(learned)
    },

    /**
     * Makes a duplicate a lead of its own again (and keeps it so); records `feedback.unmerged`. `requeue`:
     * its `process` job is queued in the same commit.
     */
    async unmerge(id: string, requeue = false): Promise<void> {
      const appId = await repo.transaction(async (tx) => {
        const r = await repo.lock(tx, id)
        const formerLeadId = r?.duplicate_of_id
        if (r && formerLeadId) {
          // An automatic merge undone: the App's bars rise above its score (learn.ts).
          if (!r.merge_locked && r.merge_score !== null) {
            await repo.recordDecision(tx, { orgId: r.org_id, appId: r.app_id }, { feedbackId: id, leadId: formerLeadId, kind: 'unmerged', score: r.merge_score }, clock.now())
          }
          await repo.setUnmerged(tx, id, clock.now())
          const duplicateCount = await refreshLead(tx, formerLeadId)
          await refreshLead(tx, id)
          await repo.recordUnmerged(tx, { orgId: r.org_id, appId: r.app_id }, { feedbackId: id, leadFeedbackId: formerLeadId, duplicateCount })
        }
        if (requeue) await repo.enqueueProcess(tx, id)
        return r && formerLeadId ? r.app_id : null
      })
      if (appId) {
        core.preparedIndex(appId)?.setLead(id, null)
        core.forgetLesson(appId)
      }
    },

    /** Drops the cached index of an App (tests; after bulk imports). */
    forget: core.forget,

    async indexSize(appId: string): Promise<number> {
      await prepare(appId)
      return core.indexSize(appId)
    },

    async thresholdsFor(appId: string): Promise<Thresholds> {
      await prepare(appId)
      await freshLesson(appId)
      return core.thresholdsFor(appId)
    },

    /** The App's bars and what its decisions taught (GET /v1/apps/:id/triage). */
    async triageState(appId: string, unmergeScore?: number) {
      await prepare(appId)
      await freshLesson(appId)
      // The calibration the clustering node stored: every node and the CLI show the same bars.
      const stored = await repo.calibration(appId)
      return triageStateOf(core.shownThresholds(appId, stored), core.lessonFor(appId), unmergeScore === undefined ? undefined : core.thresholdsIfUnmerged(appId, unmergeScore, stored))
    },

    /** Deletes the App's decisions and writes `audit` with the counts, in one commit; this node's lesson goes at once, others' within LESSON_TTL_MS. */
    async resetLearning(appId: string, audit: AuditEntry | null): Promise<Record<DecisionKind, number>> {
      const removed = await repo.transaction(async (tx) => {
        const counts = decisionCounts(await repo.clearDecisions(tx, appId))
        if (audit) await writeAuditPg(tx.client, clock, { ...audit, data: { ...audit.data, removed: counts } })
        return counts
      })
      core.forgetLesson(appId)
      return removed
    },
  }
}
export type PgClusterService = ReturnType<typeof createPgClusterService>
