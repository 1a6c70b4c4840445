/**
 * Erased reports leave every node's memory (cluster mode). A removal (a reporter's erasure, the report
 * retention) is told at once to the similarity index of the node that ran it (src/modules/reporters/
 * removal-news.ts); the other nodes hold indexes too (the partitions they cluster, /similar), with the
 * removed reports' sanitized text in their text cache and their links, until their partitions moved or
 * they restarted. Each removal now logs its ids in the database, numbered in commit order
 * (src/db/pg/removal-log.ts), and announces itself on the wake-up channel (`removed`); every node reads the
 * log past its cursor when it hears that, and on a safety poll (pub/sub is at-most-once: a node that was
 * reconnecting misses the message, and Redis may be away), and drops those ids from its indexes.
 *
 * Bounded: the message carries no ids; the log is read PAGE rows at a time (a 100,000-report retention
 * sweep is read in pages, never held whole); the cursor is one number. A node starts from the log's
 * beginning (its last hour): its indexes are built from the database anyway, and a build that read its
 * rows before a removal drops what it is told meanwhile (clusterer.ts `forgetRemoved`). A cursor that fell
 * behind the log's pruning (a node cut off from the database for over an hour) finds a gap in the numbers:
 * it cannot know what it missed, so it drops its indexes whole (they are built again when used). So does a
 * cursor past the log's highest number: the log was reset (a restore of an older database, the table
 * emptied by hand), and the rows numbered from 1 again would be skipped up to the old cursor.
 */
import type { Logger } from '../core/logger'
import { WokenReader } from './woken-reader'

/** How often a node reads the removal log when no wake-up came. */
export const REMOVAL_POLL_MS = 2_000
/** Log rows read (and ids dropped) per statement. */
export const REMOVAL_PAGE = 5_000
/** The wake-up a removal announces (src/nodes/wake-bus.ts). */
export const REMOVED = 'removed'
/** Reads asked for by wake-ups meanwhile wait this long after the one before (woken-reader.ts). */
export { WOKEN_GAP_MS } from './woken-reader'

export interface RemovalFollowerDeps {
  /** Up to `limit` log rows past `after`, in order (src/db/pg/removal-log.ts `removedSince`). */
  read(after: number, limit: number): Promise<{ seq: number; id: string }[]>
  /** The log's highest number, 0 when empty (`lastRemovedSeq`): read when caught up, to see a reset. */
  last(): Promise<number>
  /** Drops these reports from this node's indexes and text cache. */
  forget(ids: readonly string[]): Promise<void>
  /** Drops every index of this node (the log was pruned past the cursor). */
  forgetAll(): void
  log: Logger
  pollMs?: number
}

export class RemovalFollower extends WokenReader {
  private cursor = 0
  /** A read failed and none has succeeded since (warned once per outage). */
  private failing = false

  constructor(private readonly deps: RemovalFollowerDeps) {
    super({ pollMs: deps.pollMs ?? REMOVAL_POLL_MS })
  }

  /** Reads the log past the cursor (woken, or the poll) and drops what it finds from this node's indexes. */
  protected async read(): Promise<void> {
    try {
      for (;;) {
        const rows = await this.deps.read(this.cursor, REMOVAL_PAGE)
        if (rows.length === 0) {
          if (this.cursor > 0) {
            const last = await this.deps.last()
            if (last < this.cursor) {
              this.deps.log.warn('removal log reset below this node\'s cursor (a restored database?): similarity indexes dropped, built again when used', { cursor: this.cursor, last })
              this.deps.forgetAll()
              this.cursor = 0
              continue
            }
          }
          break
        }
        // Numbered without holes: a row past the one before it + 1 means the rows between were pruned unread.
        // Mostly at the page's start (the cursor fell behind the pruning), but inside it too: removed_at is
        // the database's clock, and stepped back, a later removal's rows are pruned before older ones.
        const hole = rows.findIndex((r, i) => (i === 0 ? this.cursor > 0 && r.seq > this.cursor + 1 : r.seq > rows[i - 1].seq + 1))
        if (hole >= 0) {
          this.deps.log.warn('removal log pruned past this node\'s cursor: similarity indexes dropped, built again when used', { cursor: hole === 0 ? this.cursor : rows[hole - 1].seq, next: rows[hole].seq })
          this.deps.forgetAll()
        }
        await this.deps.forget(rows.map((r) => r.id))
        this.cursor = rows[rows.length - 1].seq
        if (rows.length < REMOVAL_PAGE) break
      }
      if (this.failing) this.deps.log.info('removal log readable again')
      this.failing = false
    } catch (e) {
      if (this.stopped) return
      if (!this.failing) this.deps.log.warn('removal log unreadable: removed reports stay in this node\'s similarity index until it is read', { error: e instanceof Error ? e.message : String(e) })
      this.failing = true
    }
  }
}
