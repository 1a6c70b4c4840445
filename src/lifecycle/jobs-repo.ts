/**
 * The durable job table as the worker sees it: claim with a lease, finish, retry with backoff. Jobs are
 * inserted only by the lifecycle (`lifecycle.enqueue`), never here. Two sides: src/db/sqlite/jobs.ts
 * (prepared statements, a read before the claim's write) and src/db/pg/jobs.ts (a `FOR UPDATE SKIP
 * LOCKED` claim, so concurrent claimers never take the same job).
 */
import type { JobKind, JobRow } from './jobs'

export type { JobRow } from './jobs'

export interface JobsRepo {
  /** The next due job of this repo's kinds, leased to `owner` until `now + leaseMs`; null when none is due. */
  claim(now: number, leaseMs: number, owner: string): Promise<JobRow | null>
  /** Up to `n` more due jobs of one kind, leased together, in the order `claim` would take them. */
  claimBatch(kind: string, n: number, now: number, leaseMs: number, owner: string): Promise<JobRow[]>
  /**
   * `owner` (the one the job was claimed for): on PostgreSQL each of these four changes the job only while
   * its lease is still that owner's. A node that stalled past its lease (SIGSTOP, a VM frozen by its host)
   * had its job leases freed and taken by another node; when it resumes it must neither delete nor reset a
   * job another node now runs. SQLite has one process, whose leases no other node takes: it ignores `owner`.
   */
  finish(id: number, owner?: string): Promise<void>
  retry(id: number, runAfter: number, error: string, owner?: string): Promise<void>
  /** Not a failure: run again later without using up an attempt. */
  defer(id: number, runAfter: number, owner?: string): Promise<void>
  /** At shutdown: hand back the leases this process holds so another start picks the jobs up at once. */
  release(ids: number[], owner?: string): Promise<void>
  /**
   * At start: hands back every lease whose owner `isGone` says no longer runs (a lease without an owner
   * was taken by a version before owners existed, so by a process that is gone too). Returns how many.
   */
  reclaimOrphans(isGone: (owner: string) => boolean): Promise<number>
  /** Epoch ms of the earliest moment any job of this repo's kinds becomes claimable, or null when there is none. */
  nextDueAt(): Promise<number | null>
  hasKind(kind: JobKind): Promise<boolean>
  /** When the App's pending job of this kind runs (epoch ms), or null when it has none. */
  runAfterOf(kind: JobKind, appId: string): Promise<number | null>
}


/**
 * Thrown where a step's changes commit together with its job's deletion (the `process` step on PostgreSQL)
 * and the job's lease is no longer the claimer's: the transaction rolls back, the job belongs to whoever
 * holds it now, and the worker records nothing for it (no retry, no give-up).
 */
export class LeaseLost extends Error {
  constructor(readonly jobIds: number[]) {
    super(`job ${jobIds.join(', ')} is no longer leased to this worker (another node took it over, or it was removed with its report)`)
  }
}
