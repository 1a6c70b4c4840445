/**
 * Group commit: every write queued during one event-loop turn runs in a single SQLite transaction,
 * and each caller's promise settles only after that COMMIT. The guarantee is the same as one commit
 * per request — a 201 is never sent for a row that is not durable — at a fraction of the fsync and
 * WAL cost (one WAL frame set per batch instead of per row).
 *
 * A write that throws is undone on its own and rejects only its caller: a batch runs without savepoints
 * first, and only when one of its writes throws is it rolled back and run again with a SAVEPOINT per write.
 *
 * BEGIN can meet SQLITE_BUSY without waiting out busy_timeout (seen under load while the checkpointer
 * thread truncates the WAL): nothing was written then, so the batch is tried again a few milliseconds
 * later, for up to `BUSY_RETRY_MS`, instead of answering every request of the batch with a 500.
 */
import type { Database, Statement } from 'bun:sqlite'
import type { WriteTurns } from './write-turns'

/** How long a batch keeps retrying a BEGIN that found the database busy before its writes fail. */
export const BUSY_RETRY_MS = 5000
const BUSY_RETRY_DELAY_MS = 2

const isBusy = (e: unknown): boolean => String((e as { code?: unknown } | null)?.code ?? '').startsWith('SQLITE_BUSY')

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

  /** While a batch waits (without blocking) for the processing thread's transaction to end. */
  private waitingForTurn = false
  /** performance.now() when BEGIN first found the database busy, while a retry is pending. */
  private busySince: number | undefined
  private retryTimer: ReturnType<typeof setTimeout> | undefined
  // Prepared once: `sqlite.run(text)` compiles its statement again on every call, four times per write.
  private readonly begin: Statement
  private readonly commit: Statement
  private readonly rollback: Statement
  private readonly savepoint: Statement
  private readonly release: Statement
  private readonly rollbackTo: Statement
  private readonly batchSavepoint: Statement
  private readonly batchRelease: Statement
  private readonly batchRollbackTo: Statement

  constructor(
    private readonly sqlite: Database,
    /** When another thread writes too: each batch takes the write lock ahead of it (write-turns.ts). */
    private readonly turns?: WriteTurns,
    private readonly maxBatch = 512,
    private readonly fullBatch = 8,
    private readonly busyRetryMs = BUSY_RETRY_MS,
  ) {
    this.begin = sqlite.prepare('BEGIN IMMEDIATE')
    this.commit = sqlite.prepare('COMMIT')
    this.rollback = sqlite.prepare('ROLLBACK')
    this.savepoint = sqlite.prepare('SAVEPOINT w')
    this.release = sqlite.prepare('RELEASE w')
    this.rollbackTo = sqlite.prepare('ROLLBACK TO w')
    this.batchSavepoint = sqlite.prepare('SAVEPOINT batch')
    this.batchRelease = sqlite.prepare('RELEASE batch')
    this.batchRollbackTo = sqlite.prepare('ROLLBACK TO batch')
  }

  /** Queues a synchronous write; resolves with its result once the batch has committed. */
  run<T>(write: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ write, resolve, reject } as Pending<unknown>)
      if (this.retryTimer !== undefined || this.waitingForTurn) return
      if (this.queue.length >= this.maxBatch) this.flushSoon()
      else if (!this.scheduled) {
        this.scheduled = true
        setImmediate(() => this.flushSoon())
      }
    })
  }

  /**
   * The usual path: when the processing thread is inside a write transaction, the event loop does not
   * block on it: requests keep being read and queued, and the batch (bigger by then) commits as soon as
   * that transaction ends (write-turns.ts).
   */
  private flushSoon(): void {
    this.scheduled = false
    if (this.turns?.processingHolds() && this.queue.length > 0 && this.retryTimer === undefined) {
      this.waitingForTurn = true
      void this.turns.awaitProcessingTurnEnd().then(() => {
        this.waitingForTurn = false
        this.flush()
      })
      return
    }
    this.flush()
  }

  /** Commits everything queued now, waiting (blocking, bounded) for a processing transaction under way. Safe to call at any time (e.g. at shutdown). */
  flush(): void {
    this.scheduled = false
    if (this.retryTimer !== undefined) {
      clearTimeout(this.retryTimer)
      this.retryTimer = undefined
    }
    const batch = this.queue
    if (batch.length === 0) return
    if (this.turns) this.turns.intake(() => this.commitBatch(batch))
    else this.commitBatch(batch)
  }

  private commitBatch(batch: Pending<unknown>[]): void {
    try {
      this.begin.run()
    } catch (e) {
      this.busySince ??= performance.now()
      if (isBusy(e) && performance.now() - this.busySince < this.busyRetryMs) {
        // Nothing was written: keep the batch queued (later writes join it) and try again shortly.
        this.retryTimer = setTimeout(() => this.flush(), BUSY_RETRY_DELAY_MS)
        return
      }
      this.busySince = undefined
      this.queue = []
      for (const p of batch) p.reject(e)
      return
    }
    this.busySince = undefined
    this.queue = []
    // Optimistic pass: writes almost never throw, and a SAVEPOINT + RELEASE per write is two statements per
    // request. One savepoint around the whole batch instead; if a write throws, the batch is rolled back to
    // it (the transaction and its lock stay) and runs again with a savepoint per write (the writes are
    // plain SQL on this connection: running one again after the rollback is safe).
    if (batch.length > 1) {
      const values: unknown[] = []
      let failed = false
      try {
        this.batchSavepoint.run()
        for (const p of batch) values.push(p.write())
        this.batchRelease.run()
      } catch {
        failed = true
      }
      if (!failed) {
        if (this.commitOrRejectAll(batch)) batch.forEach((p, i) => p.resolve(values[i]))
        return
      }
      try {
        this.batchRollbackTo.run()
        this.batchRelease.run()
      } catch (e) {
        this.rollbackQuietly()
        for (const p of batch) p.reject(e)
        return
      }
    }
    const results: { ok: boolean; value: unknown }[] = []
    try {
      for (const p of batch) {
        this.savepoint.run()
        try {
          results.push({ ok: true, value: p.write() })
          this.release.run()
        } catch (e) {
          this.rollbackTo.run()
          this.release.run()
          results.push({ ok: false, value: e })
        }
      }
    } catch (e) {
      this.rollbackQuietly()
      for (const p of batch) p.reject(e)
      return
    }
    if (this.commitOrRejectAll(batch)) batch.forEach((p, i) => (results[i].ok ? p.resolve(results[i].value) : p.reject(results[i].value)))
  }

  /** COMMITs the batch's transaction; if that fails, rolls back and rejects every write of the batch (false). */
  private commitOrRejectAll(batch: Pending<unknown>[]): boolean {
    try {
      this.commit.run()
    } catch (e) {
      this.rollbackQuietly()
      for (const p of batch) p.reject(e)
      return false
    }
    this.committed(batch.length)
    return true
  }

  private rollbackQuietly(): void {
    try {
      this.rollback.run()
    } catch {
      // The failed COMMIT may have left no transaction open; nothing to undo.
    }
  }

  private committed(writes: number): void {
    this.lastCommitAt = performance.now()
    // A full batch: many requests landed in one event-loop turn, so intake is using its whole core (a
    // trickle commits one write per batch). The worker's pacing reads it (worker/processing.ts).
    this.turns?.noteIntakeCommit(writes >= this.fullBatch)
  }
}
