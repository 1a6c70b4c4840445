/**
 * Group commit on PostgreSQL: the twin of src/db/sqlite/group-commit.ts. Every write queued during one
 * event-loop turn runs, one after another, in ONE transaction on one pooled connection, and each
 * caller's promise settles only after that COMMIT: a 201 is never sent for a row that is not durable,
 * at one commit (one WAL flush, one BEGIN/COMMIT round trip pair) per batch instead of per request.
 *
 * A write that throws is undone on its own and rejects only its caller. Optimistic, as on SQLite: a
 * batch runs without savepoints first (a SAVEPOINT + RELEASE per write is two round trips per request);
 * when one of its writes throws, the whole transaction is rolled back and the batch runs again with a
 * SAVEPOINT per write. (SQLite rolls back to a batch savepoint instead, to keep the write lock it took
 * with BEGIN IMMEDIATE; a PostgreSQL transaction holds nothing worth keeping before its first write, so
 * ROLLBACK + BEGIN costs what ROLLBACK TO + RELEASE would, and the happy path saves the batch savepoint's
 * two round trips.) Writes are closures of plain SQL on the given client: running one again is safe;
 * after-commit callbacks registered by a pass that was rolled back are dropped.
 *
 * A COMMIT that fails (the connection killed, a deferred constraint) rejects every write of the batch:
 * none of them is known durable. A connection that broke is destroyed, not returned to the pool, and the
 * next batch takes a fresh one.
 *
 * One batch in flight per committer: while it commits, new writes queue for the next batch (which then
 * starts at once, bigger). Why not more: intake's writes of one Org all bump that Org's `event_counters`
 * row (src/db/pg/outbox.ts), so a second concurrent batch would mostly wait on the first one's row lock
 * while holding a second pooled connection; one at a time also keeps the process's report ids in commit
 * order (cursor paging reads `id < cursor`). Batches are capped (`maxBatch`) so one transaction never
 * holds its locks for long.
 */
import type { Pool, PoolClient } from 'pg'
import type { OnCommit } from './transaction'

/** Where intake's commits are noted for the worker's pacing (src/db/sqlite/write-turns.ts's WriteTurns has it). */
export interface IntakeCommitNotes {
  noteIntakeCommit(full: boolean): void
}

/** What a queued write is given: the batch transaction's client, and where to register after-commit work. */
export interface PgWriteTx {
  client: PoolClient
  onCommit: OnCommit
}

export type PgWrite<T> = (tx: PgWriteTx) => Promise<T>

interface Pending<T> {
  write: PgWrite<T>
  resolve: (value: T) => void
  reject: (error: unknown) => void
}

interface Outcome {
  ok: boolean
  value: unknown
  committed: (() => void)[]
}

export class PgGroupCommitter {
  private queue: Pending<unknown>[] = []
  private scheduled = false
  private inFlight = false
  /** Batches committed and writes in them (tests and the bench read these). */
  readonly stats = { batches: 0, writes: 0 }

  constructor(
    private readonly pool: Pool,
    /**
     * Intake's commit times for the worker's pacing (worker/processing.ts `intakePacing`). On PostgreSQL the
     * worker sanitizes and clusters on this same thread; unpaced, it took the event loop between a burst's
     * batches (bench/pg-intake.ts: POST 0.12x the floor at concurrency 4), so requests waited behind it.
     */
    private readonly notes?: IntakeCommitNotes,
    private readonly maxBatch = 256,
    /** A batch this big means requests arrive faster than one per event-loop turn: intake saturates its core. */
    private readonly fullBatch = 8,
  ) {}

  /** Queues a write; resolves with its result once the batch it ran in has committed. */
  run<T>(write: PgWrite<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ write, resolve, reject } as Pending<unknown>)
      this.schedule()
    })
  }

  /** Starts a batch now with what is queued (e.g. at shutdown); a batch already in flight is followed by another. */
  flush(): void {
    this.scheduled = false
    if (this.inFlight || this.queue.length === 0) return
    const batch = this.queue.splice(0, this.maxBatch)
    this.inFlight = true
    void this.commitBatch(batch).finally(() => {
      this.inFlight = false
      if (this.queue.length > 0) this.schedule()
    })
  }

  private schedule(): void {
    if (this.inFlight || this.scheduled) return
    this.scheduled = true
    // The end of this event-loop turn: every request read in it joins the batch.
    setImmediate(() => this.flush())
  }

  private async commitBatch(batch: Pending<unknown>[]): Promise<void> {
    let client: PoolClient
    try {
      client = await this.pool.connect()
    } catch (e) {
      for (const p of batch) p.reject(e)
      return
    }
    let broken: Error | undefined
    // The backend can end between two statements (pg_terminate_backend, a restart): the client reports
    // it as an 'error' event, which unheard would end the process. The batch's next statement fails then.
    const onError = (e: Error) => void (broken = e)
    client.on('error', onError)
    try {
      await client.query('BEGIN')
      let outcomes = await this.pass(client, batch, false)
      if (outcomes.some((o) => !o.ok)) {
        await client.query('ROLLBACK')
        // A single write needs no second pass: its failure is the batch's, and nothing is left to commit.
        if (batch.length === 1) return batch[0].reject(outcomes[0].value)
        await client.query('BEGIN')
        outcomes = await this.pass(client, batch, true)
      }
      try {
        await client.query('COMMIT')
      } catch (e) {
        broken ??= e as Error
        for (const p of batch) p.reject(e)
        return
      }
      this.stats.batches++
      this.stats.writes += batch.length
      this.notes?.noteIntakeCommit(batch.length >= this.fullBatch)
      batch.forEach((p, i) => {
        const o = outcomes[i]
        if (!o.ok) return p.reject(o.value)
        for (const callback of o.committed) callback()
        p.resolve(o.value)
      })
    } catch (e) {
      // BEGIN, ROLLBACK or a SAVEPOINT statement failed: the connection (or the server) is gone.
      broken ??= e as Error
      await client.query('ROLLBACK').catch(() => {})
      for (const p of batch) p.reject(e)
    } finally {
      client.removeListener('error', onError)
      client.release(broken)
    }
  }

  /**
   * Runs the batch's writes in order. Without savepoints (the optimistic pass) it stops at the first
   * write that throws (the transaction is aborted then); with them each write is undone alone and the
   * next one runs. A SAVEPOINT statement that fails throws: the connection is gone.
   */
  private async pass(client: PoolClient, batch: Pending<unknown>[], savepoints: boolean): Promise<Outcome[]> {
    const outcomes: Outcome[] = []
    for (const p of batch) {
      const committed: (() => void)[] = []
      if (savepoints) await client.query('SAVEPOINT w')
      try {
        const value = await p.write({ client, onCommit: (cb) => committed.push(cb) })
        if (savepoints) await client.query('RELEASE SAVEPOINT w')
        outcomes.push({ ok: true, value, committed })
      } catch (e) {
        outcomes.push({ ok: false, value: e, committed: [] })
        if (!savepoints) return outcomes
        await client.query('ROLLBACK TO SAVEPOINT w')
        await client.query('RELEASE SAVEPOINT w')
      }
    }
    return outcomes
  }
}
