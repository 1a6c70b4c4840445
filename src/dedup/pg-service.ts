/**
 * Near-duplicate clustering on PostgreSQL: the same indexes, rankings and verdicts as the SQLite service
 * (src/dedup/clusterer.ts, shared), the same rows and events. The App indexes live in the process
 * whose worker processes reports (one node for now: this process runs every job kind).
 *
 * A verdict is computed synchronously over a snapshot: the rows it reads (the report, its nearest
 * candidates and their leads: `clusterer.shortlist`) are read in one statement just before. The write
 * then checks in its transaction what the verdict assumed: the lead is read `FOR UPDATE` and must still
 * take duplicates, else nothing is written and the caller clusters the report again.
 *
 * The steps of a change (attach, stay a lead, merge, unmerge, reject a suggestion, a lead's summary) are
 * planned once for both storage sides in ./steps.ts; this file reads what a plan needs and applies its
 * writes (`applyWrites`). What stays here, on purpose, and not in src/dedup/service.ts:
 * - the transaction's shape: every write of a change in one PgTx, awaited; the processing engine's
 *   transaction joins through `applyInTx` (no batches and no savepoints: each report is its own commit);
 * - the locks: a plan's rows are read `FOR UPDATE`, the member before its lead (every cluster change
 *   locks in that order), and a lead's summary is rebuilt from the database with its row locked (no lead
 *   states in memory: another node may change the cluster at any time);
 * - the snapshot a verdict is computed over (read before the transaction, links corrected from it), and
 *   the index learning a plan's links only once the transaction has committed.
 */
import type { Clock } from '../core/clock'
import type { TxClusterSides } from './store-sides'
import type { CandidateRow, ClusterRow as Row, RootState } from './cluster-repo'
import { createClusterer, MAX_INDEXED_PER_APP, type ClusterReads, type Sanitized, type SimilarEntry, type Verdict } from './clusterer'
import { DEFAULT_THRESHOLDS, type Thresholds } from './decide'
import { decisionCounts, LEARNING, type DecisionKind } from './learn'
import type { AuditEntry } from '../modules/audit/entry'
import { appTriageState, whyAutomatic } from './suggestions'
import { attachedPayload, attachPlan, calibrationWrites, leadSummary, leadSummaryOfDistinct, mayAttach, mergePlan, mergeRefusal, rejectPlan, resetAudit, stayLeadPlan, unmergedPayload, unmergePlan, type ClusterWrite, type IndexChange, type MergeRefusal } from './steps'

/** `Tx`: the store's transaction handle (a PgTx), passed through to its queries untouched. */
export function createPgClusterService<Tx>(sides: TxClusterSides<Tx>, clock: Clock, baseThresholds: Thresholds = DEFAULT_THRESHOLDS) {
  const { dedup: repo, writeAudit } = sides
  /** The rows the computation under way may read (see the file's comment), and an App's rows while its index is built. */
  let snapshot: Map<string, Row> = new Map()
  const seeds = new Map<string, Map<string, Row>>()
  /** While a batch plans (`planBatch`): the ids a ranking asked for that its snapshot did not hold (read, then planned again). */
  let misses: Set<string> | null = null
  /** Ids a batch's reads found gone: no miss. */
  let absent: Set<string> = new Set()
  const rowOf = (id: string): Row | null => {
    const r = snapshot.get(id)
    if (r) return r
    for (const seed of seeds.values()) {
      const s = seed.get(id)
      if (s) return s
    }
    if (misses && !absent.has(id)) misses.add(id)
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

  async function prepare(appId: string): Promise<void> {
    // Again when the index was forgotten while it was built (this node took the App's partition meanwhile:
    // src/nodes/partitions.ts): that build kept nothing.
    for (let tries = 0; tries < 3 && !core.preparedIndex(appId); tries++) {
      await core.prepare(appId, async () => {
        const rows = await repo.loadApp(appId, MAX_INDEXED_PER_APP)
        // The build seeds its calibration from these rows (the text cache may not hold them all).
        seeds.set(appId, new Map(rows.map((r) => [r.id, r])))
        return rows
      }).finally(() => seeds.delete(appId))
    }
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
  async function withSnapshot<T>(id: string, limit: number | undefined, compute: () => T, override?: Sanitized, similar = false): Promise<T | null> {
    const stored = await repo.get(id)
    if (!stored) return null
    await prepare(stored.app_id)
    await freshLesson(stored.app_id)
    const r: Row = override ? { ...stored, ...override, status: 'sanitized' } : stored
    // /similar finds its candidates by more words than a verdict: read what it will rank.
    const near = (): string[] => (similar ? core.similarShortlist(r, limit ?? 0) : core.shortlist(r, limit))
    let rows = await repo.rows(near())
    // Cluster mode: another node may have merged or unmerged by hand since this index learned a link
    // (its own index took the change, this one did not). The rows just read are the truth: correct the
    // links they show, and read again once if any changed (the shortlist follows the links).
    if (correctLinks(stored.app_id, rows)) rows = await repo.rows(near())
    rows.set(id, stored)
    if (similar) {
      // Then the rows its candidates' neighbourhoods read (neighbourhood.ts), those not known yet.
      snapshot = rows
      let more: string[]
      try {
        more = core.neighbourhoodReads(id, limit ?? 0)
      } finally {
        snapshot = new Map()
      }
      if (more.length > 0) for (const [k, v] of await repo.rows(more)) if (!rows.has(k)) rows.set(k, v)
    }
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
  async function refreshLead(tx: Tx, leadId: string): Promise<number> {
    const lead = await repo.lock(tx, leadId)
    if (!lead) return 0
    const stats = await repo.duplicateStats(tx, leadId)
    // Never a summary of raw text: a report not sanitized yet has none.
    if (lead.redactions === null) return stats.n
    const window = await repo.duplicateTexts(tx, leadId)
    await repo.saveLead(tx, leadId, leadSummary(lead.text, stats.n, stats.last, window, core.boilerplateOf(lead.app_id)), clock.now())
    return stats.n
  }

  /**
   * Applies a plan's writes (steps.ts) in order, in `tx`; false when one found nothing to change and the
   * rest was skipped. Every summary is rebuilt at once (a change carries no lead state here).
   */
  async function applyWrites(tx: Tx, writes: ClusterWrite[]): Promise<boolean> {
    const now = clock.now()
    const counts = new Map<string, number>()
    for (const w of writes) {
      switch (w.kind) {
        case 'duplicate':
          await repo.setDuplicate(tx, w.id, w.leadId, w.locked, w.why, now)
          break
        case 'moveDuplicates':
          await repo.moveDuplicates(tx, w.from, w.to, now)
          break
        case 'summary':
          counts.set(w.leadId, await refreshLead(tx, w.leadId))
          break
        case 'attached':
          await repo.recordAttached(tx, w.scope, attachedPayload(w.data, counts.get(w.data.leadFeedbackId) ?? 0))
          break
        case 'suggestion':
          await repo.setSuggestion(tx, w.id, w.suggestion, now)
          break
        case 'suggested':
          await repo.recordSuggested(tx, w.scope, w.data)
          break
        case 'rejectSuggestion':
          if (!(await repo.rejectSuggestion(tx, w.id, w.leadId, now))) return false
          break
        case 'decision':
          await repo.recordDecision(tx, w.scope, w.decision, now)
          break
        case 'unmerge':
          await repo.setUnmerged(tx, w.id, now)
          break
        case 'unmerged':
          await repo.recordUnmerged(tx, w.scope, unmergedPayload(w.data, counts.get(w.data.leadFeedbackId) ?? 0))
          break
        case 'enqueueProcess':
          await repo.enqueueProcess(tx, w.id)
          break
        case 'calibration':
          await repo.saveCalibration(tx, w.appId, w.snapshot, now)
          break
      }
    }
    return true
  }

  /** What this node's index and lesson learn from a committed plan (another node's index corrects its links from the rows it reads). */
  function learn(change: IndexChange | null): void {
    if (!change) return
    const index = core.preparedIndex(change.appId)
    for (const [id, leadId] of change.links) index?.setLead(id, leadId)
    if (change.forgetLesson) core.forgetLesson(change.appId)
  }

  /**
   * A stored suggestion's lead and its lead's lead, read in `tx` (not locked: a merge locks the member,
   * then its target, in that order only), as a lookup for `currentLeadOf`.
   */
  async function rootsOf(tx: Tx, leadId: string | null): Promise<(id: string) => RootState | null> {
    const states = new Map<string, RootState>()
    if (leadId) {
      const lead = await repo.get(leadId, tx)
      if (lead) states.set(leadId, lead)
      if (lead?.duplicate_of_id) {
        const root = await repo.get(lead.duplicate_of_id, tx)
        if (root) states.set(lead.duplicate_of_id, root)
      }
    }
    return (id) => states.get(id) ?? null
  }

  /**
   * Reads `ids` into the batch's snapshot (`rows`), in one statement: the ones not found are gone (not
   * missed again), and the links they show correct the index (another node may have changed them).
   */
  async function readInto(rows: Map<string, Row>, ids: Iterable<string>): Promise<void> {
    const want = [...new Set(ids)].filter((id) => !rows.has(id) && !absent.has(id))
    if (want.length === 0) return
    const found = await repo.rows(want)
    for (const id of want) {
      const r = found.get(id)
      if (r) rows.set(id, r)
      else absent.add(id)
    }
    for (const appId of new Set([...found.values()].map((r) => r.app_id))) correctLinks(appId, found)
  }

  return {
    /** Builds the App's index without blocking. */
    prepare,

    /**
     * The verdicts of a batch's reports, in order (null: gone or a duplicate now), each indexed at once so
     * the later ones rank against it (`sanitized`: its sanitized columns, not stored yet). The rows the
     * rankings read come from one statement for the whole batch (the reports' shortlists as the index
     * stands), plus one more whenever a ranking asks for a row it did not hold (that report is then planned
     * again). Nothing is written: the caller writes the verdicts in its transaction, where it checks under
     * lock that each still holds, and `dropPlan`s the ones it does not write.
     */
    async planBatch(items: { id: string; appId: string; sanitized?: Sanitized }[]): Promise<(Verdict | null)[]> {
      const appIds = new Set(items.map((i) => i.appId))
      for (const appId of appIds) {
        await prepare(appId)
        await freshLesson(appId)
      }
      absent = new Set()
      const rows = new Map<string, Row>()
      await readInto(rows, items.map((i) => i.id))
      const near: string[] = []
      for (const it of items) {
        const stored = rows.get(it.id)
        if (stored) near.push(...core.shortlist(it.sanitized ? { ...stored, ...it.sanitized, status: 'sanitized' } : stored))
      }
      await readInto(rows, near)
      try {
        return await core.withPlansAsync(async () => {
          const out: (Verdict | null)[] = []
          for (const it of items) {
            let verdict: Verdict | null = null
            for (let attempt = 1; ; attempt++) {
              misses = new Set()
              snapshot = rows
              try {
                verdict = core.plan(it.id, it.sanitized)
              } finally {
                snapshot = new Map()
              }
              const missed: string[] = [...misses]
              misses = null
              if (missed.length === 0 || attempt >= 3) break
              core.dropPlan(it.id, it.appId)
              await readInto(rows, missed)
            }
            out.push(verdict)
          }
          return out
        })
      } finally {
        misses = null
        absent = new Set()
      }
    },

    /**
     * A batch's lead summaries, rebuilt in `tx` once its rows are written there: every lead's count, newest
     * time and window read in one statement, the summaries written in one (a lead not sanitized yet gets
     * none, as `refreshLead`). Answers each lead's duplicate count now.
     */
    async summariesInTx(tx: Tx, leadIds: string[]): Promise<Map<string, number>> {
      const states = await repo.leadStates(tx, leadIds)
      const counts = new Map<string, number>()
      const save: { id: string; summary: ReturnType<typeof leadSummary> }[] = []
      for (const [id, s] of states) {
        counts.set(id, s.n)
        if (s.sanitized) save.push({ id, summary: leadSummaryOfDistinct(s.text, s.n, s.last, s.distinct, s.windowLength, core.boilerplateOf(s.appId)) })
      }
      await repo.saveLeads(tx, save, clock.now())
      return counts
    },

    /** The calibrations the verdicts changed, stored in `tx` (with the verdicts: what every reader shows). */
    calibrationsInTx: (tx: Tx): Promise<boolean> => applyWrites(tx, calibrationWrites(core.takeCalibrations())),

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
    async applyInTx(tx: Tx, id: string, verdict: Verdict): Promise<{ ok: boolean; after: () => void }> {
      // The calibrations the verdicts changed, with this verdict (what every reader shows).
      await applyWrites(tx, calibrationWrites(core.takeCalibrations()))
      const leadId = verdict.leadId
      if (!leadId) {
        const self = verdict.suggestion ? await repo.lock(tx, id) : null
        await applyWrites(tx, stayLeadPlan(id, self, verdict.suggestion).writes)
        return { ok: true, after: () => {} }
      }
      // The member, then its lead: every cluster change locks in this order.
      const self = await repo.lock(tx, id)
      if (!self || !mayAttach(self, await repo.lockRoot(tx, leadId))) return { ok: false, after: () => {} }
      const plan = attachPlan(id, leadId, false, whyAutomatic(verdict), self, await repo.duplicateIds(tx, id))
      await applyWrites(tx, plan.writes)
      return { ok: true, after: () => learn(plan.after) }
    },

    /** A planned report that was not written as planned: out of the index. */
    dropPlan: (id: string, appId: string): void => core.dropPlan(id, appId),

    /** Other reports of the same App as `id`, best first. */
    similar: async (id: string, limit: number): Promise<SimilarEntry[]> => (await withSnapshot(id, limit, () => core.similar(id, limit), undefined, true)) ?? [],

    /** Makes `id` (and its duplicates) duplicates of `leadId`, locked against automatic clustering (steps.ts `mergePlan`). */
    async merge(id: string, leadId: string): Promise<MergeRefusal | null> {
      const done = await repo.transaction(async (tx) => {
        // Every row the merge writes, in id order, before any other lock: member first, merges of a into b
        // and of b into a, racing, each held one row and waited for the other (a deadlock PostgreSQL ends
        // with an error, answered 503). The reads below find the rows locked already.
        await repo.lockForTriage(tx, id, leadId)
        const r = await repo.lock(tx, id)
        const lead = await repo.lockRoot(tx, leadId)
        // The lead as it is now, not as triage by hand read it before: a merge in the other direction may have committed since.
        const refusal = mergeRefusal(r, lead)
        if (refusal) return { refusal, after: null }
        const roots = await rootsOf(tx, r?.suggested_lead_id ?? null)
        const plan = mergePlan(id, leadId, r, await repo.duplicateIds(tx, id), roots)
        await applyWrites(tx, plan.writes)
        return { refusal: null, after: plan.after }
      })
      learn(done.after)
      return done.refusal
    },

    /** Rejects the report's suggestion, never to offer its lead (as served) again; records the decision (steps.ts `rejectPlan`). */
    async rejectSuggestion(id: string): Promise<void> {
      const after = await repo.transaction(async (tx) => {
        const r = await repo.lock(tx, id)
        const plan = rejectPlan(r, await rootsOf(tx, r?.suggested_lead_id ?? null))
        return plan && (await applyWrites(tx, plan.writes)) ? plan.after : null
      })
      learn(after)
    },

    /**
     * Makes a duplicate a lead of its own again (and keeps it so); records `feedback.unmerged`. `requeue`:
     * its `process` job is queued in the same commit (steps.ts `unmergePlan`).
     */
    async unmerge(id: string, requeue = false): Promise<void> {
      const after = await repo.transaction(async (tx) => {
        // In the merges' order (lockForTriage): an unmerge and a merge of its lead deadlocked.
        await repo.lockForTriage(tx, id)
        const plan = unmergePlan(id, await repo.lock(tx, id), requeue)
        await applyWrites(tx, plan.writes)
        return plan.after
      })
      learn(after)
    },

    /** Drops the cached index of an App (tests; after bulk imports; cluster mode: its partition moved). */
    forget: core.forget,
    /**
     * Reports removed outside clustering, committed: out of this node's indexes (clusterer.ts
     * `forgetRemoved`), in slices that let this thread serve meanwhile (a page of the removal log is 5,000).
     */
    async forgetRemoved(ids: readonly string[]): Promise<void> {
      await core.forgetRemovedInSlices(ids, false)
    },
    /** The Apps with an index on this node. */
    indexedApps: core.indexedApps,

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
      return appTriageState(core, appId, await repo.calibration(appId), unmergeScore)
    },

    /** Deletes the App's decisions and writes `audit` with the counts, in one commit; this node's lesson goes at once, others' within LESSON_TTL_MS. */
    async resetLearning(appId: string, audit: AuditEntry | null): Promise<Record<DecisionKind, number>> {
      const removed = await repo.transaction(async (tx) => {
        const counts = decisionCounts(await repo.clearDecisions(tx, appId))
        if (audit) await writeAudit(tx, resetAudit(audit, counts))
        return counts
      })
      core.forgetLesson(appId)
      return removed
    },
  }
}
export type PgClusterService<Tx> = ReturnType<typeof createPgClusterService<Tx>>
