/**
 * Intake goes first at SQLite's one write lock. The processing thread (src/worker/thread-entry.ts) and the
 * HTTP thread write to the same WAL database on two connections. Left to SQLite's busy handler, the HTTP
 * thread sleeps 1, 2, 5, 10… ms between retries while the processing thread, never sleeping, takes the
 * lock again and again: measured with a thread committing 2 ms transactions back to back, an intake
 * commit waited p99 179 ms (max 930 ms). With these turns it waited p99 2.4 ms: at most the one
 * processing transaction already under way.
 *
 * Flags in shared memory, Dekker-style (sequentially consistent Atomics):
 *   [0] intake wants the lock      - set by the HTTP thread around each group commit;
 *   [1] processing holds it        - set by the processing thread around each of its write transactions;
 *   [4] the sanitizer wants it     - set by the sanitize-ahead thread (worker/sanitize-ahead.ts) while it
 *                                    waits to write a chunk of sanitized reports;
 *   [5] the sanitizer holds it     - around that write.
 * The order is intake, then the sanitizer, then processing: each waits while one before it wants the lock,
 * and waits (bounded, for intake) only for the transaction in hand. The sanitizer goes before processing
 * because its writes are short (a chunk it sanitized outside the lock) and the processing thread's next
 * reports need them. SQLite's busy_timeout stays underneath for every other writer (the CLI).
 */
import type { Database } from 'bun:sqlite'

const WANTS = 0
const HOLDS = 1
/** Date.now() (31 bits) of intake's last commit, and of its last commit that carried a full batch. */
const LAST_COMMIT = 2
const LAST_FULL_COMMIT = 3
const SANITIZER_WANTS = 4
const SANITIZER_HOLDS = 5
const SLOTS = 6
const MS_MASK = 0x7fffffff

/** How long intake waits for a processing transaction before it leaves the rest to busy_timeout. */
const INTAKE_MAX_WAIT_MS = 250
/** How long processing waits for intake in one go before it looks again (it never proceeds while intake wants). */
const PROCESSING_WAIT_SLICE_MS = 50

export class WriteTurns {
  readonly flags: Int32Array

  /** `shared` comes from another thread's WriteTurns (`turns.flags.buffer`), or is made here. */
  constructor(shared?: SharedArrayBuffer) {
    this.flags = new Int32Array(shared ?? new SharedArrayBuffer(SLOTS * 4))
    if (!shared) Atomics.store(this.flags, LAST_COMMIT, (Date.now() - 3_600_000) & MS_MASK)
    if (!shared) Atomics.store(this.flags, LAST_FULL_COMMIT, (Date.now() - 3_600_000) & MS_MASK)
  }

  /**
   * HTTP thread: a group commit just happened (`full`: it carried many writes, so requests arrive faster
   * than one per event-loop turn: intake is using its whole core). The processing thread reads these to
   * pace itself during a burst, so it does not take the CPU the load or intake need on a small machine.
   */
  noteIntakeCommit(full: boolean): void {
    const now = Date.now() & MS_MASK
    Atomics.store(this.flags, LAST_COMMIT, now)
    if (full) Atomics.store(this.flags, LAST_FULL_COMMIT, now)
  }

  /** Milliseconds since intake's last commit (`full`: its last full batch); wraps after 24 days, harmlessly. */
  msSinceIntakeCommit(full = false): number {
    return ((Date.now() & MS_MASK) - Atomics.load(this.flags, full ? LAST_FULL_COMMIT : LAST_COMMIT)) & MS_MASK
  }

  get buffer(): SharedArrayBuffer {
    return this.flags.buffer as SharedArrayBuffer
  }

  /** HTTP thread: runs `write` (one whole transaction) ahead of any processing transaction not yet begun. */
  intake<T>(write: () => T): T {
    Atomics.store(this.flags, WANTS, 1)
    try {
      const deadline = performance.now() + INTAKE_MAX_WAIT_MS
      for (;;) {
        const slot = Atomics.load(this.flags, HOLDS) === 1 ? HOLDS : Atomics.load(this.flags, SANITIZER_HOLDS) === 1 ? SANITIZER_HOLDS : -1
        const left = deadline - performance.now()
        if (slot < 0 || left <= 0) break
        Atomics.wait(this.flags, slot, 1, left)
      }
      return write()
    } finally {
      Atomics.store(this.flags, WANTS, 0)
      Atomics.notify(this.flags, WANTS)
    }
  }

  /** Processing thread: true while intake waits for the lock (a long transaction should end now). */
  intakeWaiting(): boolean {
    return Atomics.load(this.flags, WANTS) === 1
  }

  /** True while the processing thread (or the sanitizer) is inside a write transaction. */
  processingHolds(): boolean {
    return Atomics.load(this.flags, HOLDS) === 1 || Atomics.load(this.flags, SANITIZER_HOLDS) === 1
  }

  /**
   * HTTP thread, without blocking its event loop: marks that intake wants the lock (the processing thread
   * starts no new transaction) and resolves when the one under way ends, or after `timeoutMs`. The caller
   * then commits through `intake` (which clears the mark). Meanwhile requests keep being read and queued.
   */
  async awaitProcessingTurnEnd(timeoutMs = INTAKE_MAX_WAIT_MS): Promise<void> {
    Atomics.store(this.flags, WANTS, 1)
    const slot = Atomics.load(this.flags, HOLDS) === 1 ? HOLDS : SANITIZER_HOLDS
    const wait = Atomics.waitAsync(this.flags, slot, 1, timeoutMs)
    if (wait.async) await wait.value
  }

  /** Processing thread: runs `write` (one whole transaction) when neither intake nor the sanitizer wants the lock. */
  processing<T>(write: () => T): T {
    for (;;) {
      this.waitWhileSet(WANTS)
      this.waitWhileSet(SANITIZER_WANTS)
      Atomics.store(this.flags, HOLDS, 1)
      // Both sides store, then load the other's flag: at least one of them sees the other and yields.
      if (Atomics.load(this.flags, WANTS) === 0 && Atomics.load(this.flags, SANITIZER_WANTS) === 0) break
      this.releaseHold()
    }
    try {
      return write()
    } finally {
      this.releaseHold()
    }
  }

  /**
   * Sanitize-ahead thread: runs `write` (one whole transaction) when intake does not want the lock, after
   * the processing transaction in hand (the processing thread starts no new one meanwhile).
   */
  sanitizer<T>(write: () => T): T {
    Atomics.store(this.flags, SANITIZER_WANTS, 1)
    try {
      for (;;) {
        this.waitWhileSet(WANTS)
        this.waitWhileSet(HOLDS)
        Atomics.store(this.flags, SANITIZER_HOLDS, 1)
        if (Atomics.load(this.flags, WANTS) === 0 && Atomics.load(this.flags, HOLDS) === 0) break
        this.releaseHold('sanitizer')
      }
      try {
        return write()
      } finally {
        this.releaseHold('sanitizer')
      }
    } finally {
      Atomics.store(this.flags, SANITIZER_WANTS, 0)
      Atomics.notify(this.flags, SANITIZER_WANTS)
    }
  }

  /** True while the sanitizer waits for the lock or holds it. */
  sanitizerWaiting(): boolean {
    return Atomics.load(this.flags, SANITIZER_WANTS) === 1
  }

  private waitWhileSet(slot: number): void {
    while (Atomics.load(this.flags, slot) === 1) Atomics.wait(this.flags, slot, 1, PROCESSING_WAIT_SLICE_MS)
  }

  /** Also called by the HTTP thread when a thread ended without releasing its hold (its want too, for the sanitizer). */
  releaseHold(side: 'processing' | 'sanitizer' = 'processing'): void {
    const slot = side === 'processing' ? HOLDS : SANITIZER_HOLDS
    Atomics.store(this.flags, slot, 0)
    Atomics.notify(this.flags, slot)
  }

  /** HTTP thread: the sanitizer thread ended without clearing its flags. */
  releaseSanitizer(): void {
    this.releaseHold('sanitizer')
    Atomics.store(this.flags, SANITIZER_WANTS, 0)
    Atomics.notify(this.flags, SANITIZER_WANTS)
  }
}

/**
 * Makes every outermost `sqlite.transaction(...)` of this connection take its turn on `side` (nested ones
 * are savepoints inside the turn already held). Single-statement writes outside a transaction are short
 * and left to busy_timeout.
 */
export function takeTurnsForTransactions(sqlite: Database, turns: WriteTurns, side: 'intake' | 'processing' | 'sanitizer'): void {
  const transaction = sqlite.transaction.bind(sqlite)
  const take = side === 'intake' ? turns.intake.bind(turns) : side === 'processing' ? turns.processing.bind(turns) : turns.sanitizer.bind(turns)
  sqlite.transaction = ((fn: (...args: unknown[]) => unknown) => {
    const tx = transaction(fn)
    const inTurn =
      <A extends unknown[], R>(run: (...args: A) => R) =>
      (...args: A): R =>
        sqlite.inTransaction ? run(...args) : take(() => run(...args))
    return Object.assign(inTurn(tx), { deferred: inTurn(tx.deferred), immediate: inTurn(tx.immediate), exclusive: inTurn(tx.exclusive) })
  }) as Database['transaction']
}
