/**
 * What triage by hand (the sk_ routes, the dashboard) asks of clustering. The similarity index lives
 * with the worker that clusters new reports: on SQLite on the processing thread in a server
 * (src/worker/thread.ts answers these calls by message), or in this thread when the worker runs here
 * (tests with an injected clock, and PostgreSQL, where this thread's worker runs every job kind). Either
 * way there is one index per App and every change to a cluster goes through it, so the index never
 * disagrees with the database.
 */
import type { SimilarEntry } from './clusterer'
import type { TriageState } from './suggestions'
import type { DecisionKind } from './learn'
import type { AuditEntry } from '../modules/audit/entry'
import type { MergeRefusal } from './steps'

export interface ClusterPort {
  /** Builds the App's index if it is not built yet (in slices: it never blocks the thread that owns it). */
  prepare(appId: string): Promise<void>
  /** Other reports of the same App as `id`, best first. */
  similar(id: string, limit: number): Promise<SimilarEntry[]>
  /**
   * Makes `id` (and its duplicates) duplicates of `leadId`, locked against automatic clustering; a
   * refusal (nothing written) when `leadId` is no lead any more as the merge's transaction reads it.
   */
  merge(id: string, leadId: string): Promise<MergeRefusal | null>
  /** Makes a duplicate a lead again and queues its `process` job in the same commit. */
  unmerge(id: string): Promise<void>
  /** Clears the report's suggestion, never to offer that lead again; records the decision. */
  rejectSuggestion(id: string): Promise<void>
  /** The App's merge bars now and what its people's decisions taught (`unmergeScore`: and the bars once such a merge were undone). */
  triageState(appId: string, unmergeScore?: number): Promise<TriageState>
  /**
   * Forgets what the App's bars learned: deletes its triage decisions and writes `audit` (with the counts
   * removed) in one commit; the App's bars are the calibrated ones from the next verdict on.
   */
  resetLearning(appId: string, audit: AuditEntry | null): Promise<Record<DecisionKind, number>>
  /**
   * These reports were removed outside clustering (an erasure, the report retention), committed: the
   * index forgets them (their text too) and relinks their duplicates as the database has them now.
   */
  forgetRemoved(ids: readonly string[]): Promise<void>
}
