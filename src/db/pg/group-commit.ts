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
 * Bulk writes (`runBulk`): a kind of write that can be done for many callers by one statement (plain
 * submissions: src/db/pg/feedback.ts) gathers the batch's items of that kind into one step. A batch runs
 * its statements one after another on its one connection, so the round trips per write bound intake;
 * one INSERT … SELECT FROM unnest(…) for the batch's reports makes that one per batch. When the gathered
 * step fails, the savepoint pass runs each item alone, so one bad item still rejects only its caller.
 *
 * A COMMIT that fails (the connection killed, a deferred constraint) rejects every write of the batch:
 * none of them is known durable. A connection that broke is destroyed, not returned to the pool, and the
 * next batch takes a fresh one.
 *
 * Lock order across nodes: a batch's writes run in arrival order, and a submission stored one at a time (an
 * Idempotency-Key, an upload, spam) bumps its Org's `event_counters` row where it runs. Two nodes' batches
 * holding the counters of two Orgs in opposite orders deadlocked (as did a key's row locked before its
 * Org's counter: db/pg/feedback.ts locks the counter first now): PostgreSQL broke each cycle after its
 * `deadlock_timeout` (1 s), stalling both batches, and the write it aborted in a savepoint pass answered 500
 * (the widget sends every report with a key: three nodes and four Orgs took 6 reports a second, p50 4 s).
 * So a batch with such a write that names several Orgs (`run`/`runBulk`'s `orgs`) first locks their
 * counters, in one statement ordered by Org id (the order the processing batch's statement and the bulk
 * submissions' statement take them in too): counters are taken in one order everywhere. A batch of one
 * Org takes its one counter where its first write bumps it, without the extra round trip.
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
import { eventsBegin, eventsCommitted, eventsRolledBackToSavepoint, eventsSavepoint } from './event-signal'
import type { IntakeTurns } from '../intake-turns'

/** What a queued write is given: the batch transaction's client, and where to register after-commit work. */
export interface PgWriteTx {
  client: PoolClient
  onCommit: OnCommit
}

export type PgWrite<T> = (tx: PgWriteTx) => Promise<T>

/**
 * Writes of one kind that a batch runs as ONE statement: `writeMany` takes every item of the kind queued
 * in the batch (in queue order) and answers one result per item, in order. One round trip for a batch's
 * plain submissions instead of one each: on a batch's single connection the round trips are the cost.
 */
export interface PgBulk<I, R> {
  writeMany(tx: PgWriteTx, items: I[]): Promise<R[]>
}

interface Pending<T> {
  write: PgWrite<T>
  /** The Orgs whose event counters the write bumps (locked first, in order: see the file's comment). */
  orgs?: readonly string[]
  /** Set for a bulk write: the optimistic pass runs the batch's items of the same bulk together. */
  bulk?: { kind: PgBulk<unknown, unknown>; item: unknown }
  resolve: (value: T) => void
  reject: (error: unknown) => void
}

/** What one pass runs as one step: a write, or a bulk kind's items together; `at` are their batch positions. */
interface Unit {
  at: number[]
  run(tx: PgWriteTx): Promise<unknown[]>
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
    private readonly notes?: Pick<IntakeTurns, 'noteIntakeCommit'>,
    private readonly maxBatch = 256,
    /** A batch this big means requests arrive faster than one per event-loop turn: intake saturates its core. */
    private readonly fullBatch = 8,
  ) {}

  /**
   * Queues a write; resolves with its result once the batch it ran in has committed. `orgs`: the Orgs whose
   * event counters it bumps (appends events for).
   */
  run<T>(write: PgWrite<T>, orgs?: readonly string[]): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ write, orgs, resolve, reject } as Pending<unknown>)
      this.schedule()
    })
  }

  /**
   * Queues one item of a bulk kind; resolves with its result once the batch it ran in has committed. The
   * items of one kind in a batch run as one `writeMany` at the first one's place; when that step fails,
   * the batch runs again one item at a time (each under its own savepoint), so a bad item fails alone.
   */
  runBulk<I, R>(kind: PgBulk<I, R>, item: I, orgs?: readonly string[]): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const single: PgWrite<R> = async (tx) => (await kind.writeMany(tx, [item]))[0]
      this.queue.push({ write: single, orgs, bulk: { kind: kind as PgBulk<unknown, unknown>, item }, resolve, reject } as Pending<unknown>)
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
      const counters = countersToLock(batch)
      eventsBegin(client)
      await client.query('BEGIN')
      if (counters) await client.query(LOCK_COUNTERS, [counters])
      let outcomes = await this.pass(client, batch, false)
      if (outcomes.some((o) => !o.ok)) {
        await client.query('ROLLBACK')
        // A single write needs no second pass: its failure is the batch's, and nothing is left to commit.
        if (batch.length === 1) return batch[0].reject(outcomes[0].value)
        eventsBegin(client)
        await client.query('BEGIN')
        if (counters) await client.query(LOCK_COUNTERS, [counters])
        outcomes = await this.pass(client, batch, true)
      }
      try {
        await client.query('COMMIT')
      } catch (e) {
        broken ??= e as Error
        for (const p of batch) p.reject(e)
        return
      }
      eventsCommitted(client)
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
   * Runs the batch's writes in order. Without savepoints (the optimistic pass) the items of each bulk kind
   * run together, and the pass stops at the first step that throws (the transaction is aborted then);
   * with them each write is undone alone and the next one runs. A SAVEPOINT statement that fails throws:
   * the connection is gone. The outcomes are indexed like the batch.
   */
  private async pass(client: PoolClient, batch: Pending<unknown>[], savepoints: boolean): Promise<Outcome[]> {
    const outcomes: Outcome[] = []
    for (const unit of savepoints ? singles(batch) : units(batch)) {
      const committed: (() => void)[] = []
      if (savepoints) {
        await client.query('SAVEPOINT w')
        eventsSavepoint(client)
      }
      try {
        const values = await unit.run({ client, onCommit: (cb) => committed.push(cb) })
        if (savepoints) await client.query('RELEASE SAVEPOINT w')
        // A bulk step's after-commit work is the step's, done once: it rides on its first item.
        unit.at.forEach((i, k) => (outcomes[i] = { ok: true, value: values[k], committed: k === 0 ? committed : [] }))
      } catch (e) {
        for (const i of unit.at) outcomes[i] = { ok: false, value: e, committed: [] }
        if (!savepoints) return outcomes
        await client.query('ROLLBACK TO SAVEPOINT w')
        // The write's events are undone: so is their news (only committed seqs are announced).
        eventsRolledBackToSavepoint(client)
        await client.query('RELEASE SAVEPOINT w')
      }
    }
    return outcomes
  }
}

/**
 * Locks the named Orgs' event counters in Org id order (made at 0 when an Org has none yet): the no-op
 * DO UPDATE takes each row's lock, and the rows go in the SELECT's order.
 */
const LOCK_COUNTERS = `INSERT INTO event_counters (org_id, last_seq) SELECT o, 0 FROM unnest($1::text[]) AS o ORDER BY o
  ON CONFLICT (org_id) DO UPDATE SET last_seq = event_counters.last_seq`

/**
 * The Orgs whose counters a batch locks first, or null when it needs not: a batch of bulk writes only bumps
 * its counters in the one statement of each kind (in Org order), and a batch of one Org holds one counter.
 */
function countersToLock(batch: Pending<unknown>[]): string[] | null {
  if (!batch.some((p) => !p.bulk && p.orgs && p.orgs.length > 0)) return null
  const orgs = [...new Set(batch.flatMap((p) => p.orgs ?? []))]
  return orgs.length > 1 ? orgs : null
}

/** Every write on its own (the savepoint pass). */
function singles(batch: Pending<unknown>[]): Unit[] {
  return batch.map((p, i) => ({ at: [i], run: async (tx) => [await p.write(tx)] }))
}

/** The optimistic pass's steps: each bulk kind's items gathered at its first item's place. */
function units(batch: Pending<unknown>[]): Unit[] {
  const steps: Unit[] = []
  const byKind = new Map<PgBulk<unknown, unknown>, { at: number[]; items: unknown[] }>()
  batch.forEach((p, i) => {
    if (!p.bulk) return void steps.push({ at: [i], run: async (tx) => [await p.write(tx)] })
    const group = byKind.get(p.bulk.kind)
    if (group) {
      group.at.push(i)
      group.items.push(p.bulk.item)
      return
    }
    const fresh = { at: [i], items: [p.bulk.item] }
    byKind.set(p.bulk.kind, fresh)
    const kind = p.bulk.kind
    steps.push({ at: fresh.at, run: (tx) => kind.writeMany(tx, fresh.items) })
  })
  return steps
}
