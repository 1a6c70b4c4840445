/**
 * Clustering's writers, one per partition of Apps (cluster mode, issue 38.2). An App's near-duplicates must
 * be judged by one similarity index, so one node at a time clusters an App; but different Apps need not
 * wait for each other: the Apps are split into `PARTITIONS` partitions (by a hash of the App's id, computed
 * by the database: `PARTITION_OF_APP`), and each partition is a lease in `leases` (`processing:<n>`, the
 * database's clock, a fencing token like the roles'). Each live node holds its share (partitions / live
 * nodes, rounded up): a node over its share lets the extra ones go at its next beat, one under it takes free
 * ones; a dead node's partitions are free once their lease runs out (one lease period) and taken at the
 * next beat after that: within about 20 s with the defaults. A node holding a partition claims the
 * `process` and `batch_release` jobs of its Apps only (src/db/pg/jobs.ts).
 *
 * A node's similarity indexes of an App are right only while no other node clustered the App since they were
 * built: `invalidate` is told of every partition this node takes, before its jobs can be claimed (an index
 * built for GET /similar, or before another node held the partition, would miss the reports clustered
 * elsewhere), and of every partition it lets go or loses.
 *
 * A partition taken is claimable only once no claimer has jobs of its Apps in hand (`inHand`): the node
 * that let it go (over its share, or stopping) finishes the batch it claimed before, and an index built
 * here meanwhile would lack that batch's reports for good (an index is built without the reports whose
 * `process` job is still queued), so their duplicates would become leads of their own. Until then the
 * lease is held and not claimed from, and looked at again at each beat. A node counted dead counts too
 * until the sweep frees its job leases: it may only have stalled (SIGSTOP, a frozen VM) and write its batch
 * when it resumes; once they are freed its write is refused (src/db/pg/lifecycle-batch.ts `finishJobsOf`).
 */
import type { Logger } from '../core/logger'
import { failureLog, type FailureLog } from '../db/outage-log'
import type { NodesRepo } from './nodes-repo'
import { BeatLoop, beatPeriod } from './beat-loop'

export const PARTITIONS = 16
/** The lease of partition `n`. */
export const partitionLease = (n: number) => `processing:${n}`

export interface PartitionOptions {
  leaseMs: number
  /** Live nodes at the coordinator's last look (at least 1). */
  liveNodes: () => number
  partitions?: number
  /** Drops what this node keeps about the Apps of these partitions (their indexes); awaited before taken ones are claimed from. */
  invalidate?: (partitions: number[]) => Promise<void>
  /** Of these partitions, those whose Apps have jobs in a claimer's hands (a lease not freed or run out): not claimable yet. */
  inHand?: (partitions: number[]) => Promise<number[]>
}

export type PartitionListener = (held: number[]) => void

export class PartitionLeases {
  private readonly held = new Map<number, number>()
  /** Taken, but another claimer still has jobs of their Apps in hand: leased here, not claimed from yet. */
  private waiting = new Set<number>()
  private readonly listeners = new Set<PartitionListener>()
  private readonly beats: BeatLoop
  private readonly count: number
  /** Where this node starts looking for free partitions: nodes that start together do not all race for partition 0. */
  private readonly offset: number

  /** Failures of the beat: the database being away logged once per window, not per partition per beat. */
  private readonly failed: FailureLog

  constructor(
    private readonly repo: Pick<NodesRepo, 'acquire' | 'release'>,
    private readonly nodeId: string,
    private readonly log: Logger,
    private readonly opts: PartitionOptions,
  ) {
    this.failed = failureLog(log)
    this.count = opts.partitions ?? PARTITIONS
    let h = 0
    for (const c of nodeId) h = (h * 31 + c.charCodeAt(0)) >>> 0
    this.offset = h % this.count
    this.beats = new BeatLoop(() => this.round(), beatPeriod(opts.leaseMs))
  }

  /** The partitions this node holds now (their leases surely valid), ascending. */
  partitions(): number[] {
    const now = performance.now()
    return [...this.held].filter(([, validUntil]) => now < validUntil).map(([p]) => p).sort((a, b) => a - b)
  }

  /** Told the partitions held after each change. */
  onChange(listener: PartitionListener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  async start(): Promise<void> {
    await this.beats.start()
  }

  async stop(): Promise<void> {
    await this.beats.stop()
    const held = [...this.held.keys()]
    const waiting = [...this.waiting]
    this.held.clear()
    this.waiting.clear()
    if (held.length > 0) {
      this.changed()
      await this.invalidate(held).catch(() => {})
    }
    // Let go at once: another node takes them at its next beat instead of after a lease period.
    await Promise.all([...held, ...waiting].map((p) => this.repo.release(partitionLease(p), this.nodeId).catch(() => {})))
  }



  /** One beat: renew what is held, let go of what is over the share, take free partitions up to it. */
  async round(): Promise<void> {
    const { leaseMs } = this.opts
    const share = Math.ceil(this.count / Math.max(1, this.opts.liveNodes()))
    // Every partition held at the last beat, also one whose lease ran out here since (lost, if not taken again).
    const before = [...this.held.keys()].sort((a, b) => a - b)
    const now = performance.now()
    // A lease that ran out here may have been held elsewhere since: taken again, it is a new partition.
    for (const [p, validUntil] of this.held) if (now >= validUntil) this.held.delete(p)
    // Over the share (a node joined): the highest ones go, so the others find them free.
    const mine = [...this.held.keys()].sort((a, b) => a - b)
    for (const p of mine.slice(share)) {
      this.held.delete(p)
      await this.repo.release(partitionLease(p), this.nodeId).catch(() => {})
    }
    // Partitions still waiting to become claimable are taken again first while there is room; the rest go.
    const waited = [...this.waiting]
    this.waiting = new Set()
    const retry = waited.slice(0, Math.max(0, share - this.held.size))
    for (const p of waited.slice(retry.length)) await this.repo.release(partitionLease(p), this.nodeId).catch(() => {})
    const order = [...retry, ...Array.from({ length: this.count }, (_, i) => (this.offset + i) % this.count).filter((p) => !retry.includes(p))]
    const taken = new Map<number, number>()
    for (const p of order) {
      const holding = this.held.has(p)
      if (!holding && this.held.size + taken.size >= share) continue
      const asked = performance.now()
      try {
        const token = await this.repo.acquire(partitionLease(p), this.nodeId, leaseMs)
        // Acted on only while the lease surely has not run out on the database's clock.
        const validUntil = asked + leaseMs - Math.min(2_000, leaseMs / 5)
        if (token === null) this.held.delete(p)
        else if (holding) this.held.set(p, validUntil)
        else taken.set(p, validUntil)
      } catch (e) {
        this.failed('warn', 'a processing partition lease could not be renewed', e, { partition: p })
      }
    }
    await this.take(taken)
    const after = this.partitions()
    const lost = before.filter((p) => !after.includes(p))
    if (lost.length > 0) await this.invalidate(lost).catch(() => {})
    if (after.join(',') !== before.join(',')) this.changed()
  }

  /**
   * Newly taken partitions become claimable once no claimer has jobs of their Apps in hand (those wait,
   * leased, for a later beat) and what this node kept about their Apps is dropped; if either fails they go back.
   */
  private async take(taken: Map<number, number>): Promise<void> {
    if (taken.size === 0) return
    try {
      const busy = new Set(this.opts.inHand ? await this.opts.inHand([...taken.keys()]) : [])
      const ready = [...taken.keys()].filter((p) => !busy.has(p))
      for (const p of busy) if (taken.has(p)) this.waiting.add(p)
      if (ready.length === 0) return
      // Dropped after the look above: an index built from here on sees every batch of theirs written.
      await this.invalidate(ready)
      for (const p of ready) this.held.set(p, taken.get(p)!)
    } catch {
      this.waiting.clear()
      await Promise.all([...taken.keys()].map((p) => this.repo.release(partitionLease(p), this.nodeId).catch(() => {})))
    }
  }

  private async invalidate(partitions: number[]): Promise<void> {
    try {
      await this.opts.invalidate?.(partitions)
    } catch (e) {
      this.log.warn('could not drop the indexes of Apps of processing partitions', { partitions, error: e instanceof Error ? e.message : String(e) })
      throw e
    }
  }

  private changed(): void {
    const held = this.partitions()
    this.log.info('processing partitions held', { node: this.nodeId, partitions: held })
    for (const l of this.listeners) l(held)
  }
}
