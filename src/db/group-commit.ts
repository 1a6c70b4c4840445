/**
 * Group commit: every write queued during one event-loop turn runs in a single SQLite transaction,
 * and each caller's promise settles only after that COMMIT. The guarantee is the same as one commit
 * per request — a 201 is never sent for a row that is not durable — at a fraction of the fsync and
 * WAL cost (one WAL frame set per batch instead of per row).
 *
 * A write that throws is undone on its own (a SAVEPOINT per write) and rejects only its caller.
 */
import type { Database } from 'bun:sqlite'
import type { WriteTurns } from './write-turns'

interface Pending<T> {
  write: () => T
  resolve: (value: T) => void
  reject: (error: unknown) => void
}

export class GroupCommitter {
  private queue: Pending<unknown>[] = []
  private scheduled = false
  /** performance.now() of the last commit: a cheap signal that writes are arriving. */
  lastCommitAt = -Infinity
  /**
   * performance.now() of the last commit that carried `fullBatch` writes or more: many requests landed
   * in one event-loop turn, so intake is using the whole core (a trickle commits one write per batch).
   */
  lastFullCommitAt = -Infinity

  constructor(
    private readonly sqlite: Database,
    /** When another thread writes too: each batch takes the write lock ahead of it (write-turns.ts). */
    private readonly turns?: WriteTurns,
    private readonly maxBatch = 512,
    private readonly fullBatch = 8,
  ) {}

  /** Queues a synchronous write; resolves with its result once the batch has committed. */
  run<T>(write: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ write, resolve, reject } as Pending<unknown>)
      if (this.queue.length >= this.maxBatch) this.flush()
      else if (!this.scheduled) {
        this.scheduled = true
        setImmediate(() => this.flush())
      }
    })
  }

  /** Commits everything queued now. Safe to call at any time (e.g. at shutdown). */
  flush(): void {
    this.scheduled = false
    const batch = this.queue
    if (batch.length === 0) return
    this.queue = []
    if (this.turns) this.turns.intake(() => this.commit(batch))
    else this.commit(batch)
  }

  private commit(batch: Pending<unknown>[]): void {
    const results: { ok: boolean; value: unknown }[] = []
    try {
      this.sqlite.run('BEGIN IMMEDIATE')
      for (const p of batch) {
        this.sqlite.run('SAVEPOINT w')
        try {
          results.push({ ok: true, value: p.write() })
          this.sqlite.run('RELEASE w')
        } catch (e) {
          this.sqlite.run('ROLLBACK TO w')
          this.sqlite.run('RELEASE w')
          results.push({ ok: false, value: e })
        }
      }
      this.sqlite.run('COMMIT')
    } catch (e) {
      try {
        this.sqlite.run('ROLLBACK')
      } catch {
        // The failed BEGIN/COMMIT may have left no transaction open; nothing to undo.
      }
      for (const p of batch) p.reject(e)
      return
    }
    this.lastCommitAt = performance.now()
    if (batch.length >= this.fullBatch) this.lastFullCommitAt = this.lastCommitAt
    this.turns?.noteIntakeCommit(batch.length >= this.fullBatch)
    batch.forEach((p, i) => (results[i].ok ? p.resolve(results[i].value) : p.reject(results[i].value)))
  }
}
