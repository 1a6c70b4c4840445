/**
 * Write turns (src/db/sqlite/write-turns.ts): the HTTP thread's commits go ahead of the processing thread's at
 * SQLite's one write lock. A real second thread (test/fixtures/turns-holder.ts) runs back-to-back 3 ms
 * write transactions on its own connection; the main thread commits through `WriteTurns.intake` (as the
 * group committer does). Checked: intake is never starved (every commit lands while the other thread
 * keeps writing), at most the one processing transaction under way runs before a waiting intake commit,
 * and the two never overlap. Without turns (SQLite's busy handler alone) the same race let the other
 * thread overtake waiting commits again and again, or starve them into SQLITE_BUSY after a 300 ms
 * busy_timeout; that contrast is timing-dependent (the other thread must get its core), so it is not a
 * test here: bench/README.md ("write turns") has the measured figures.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { rmSync } from 'node:fs'
import { takeTurnsForTransactions, WriteTurns } from '../src/db/sqlite/write-turns'
import { GroupCommitter } from '../src/db/sqlite/group-commit'
import { tempDir } from './harness'

let dir: string
beforeAll(() => {
  dir = tempDir('fixloop-turns-')
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function openDb(file: string): Database {
  const db = new Database(file, { create: true })
  db.run('PRAGMA busy_timeout = 5000')
  db.run('PRAGMA journal_mode = WAL')
  db.run('CREATE TABLE IF NOT EXISTS spans (who TEXT NOT NULL, started REAL NOT NULL, ended REAL NOT NULL)')
  return db
}

async function startHolder(file: string, turns: WriteTurns, holdMs: number, side: 'processing' | 'sanitizer' = 'processing'): Promise<Worker> {
  const holder = new Worker(new URL('./fixtures/turns-holder.ts', import.meta.url).href)
  await new Promise<void>((resolve) => {
    holder.onmessage = (e) => e.data.type === 'started' && resolve()
    holder.postMessage({ file, turns: turns.buffer, order: order.buffer, holdMs, side })
  })
  return holder
}

async function stopHolder(holder: Worker): Promise<number> {
  const n = await new Promise<number>((resolve) => {
    holder.onmessage = (e) => e.data.type === 'stopped' && resolve(e.data.n)
    holder.postMessage({ type: 'stop' })
  })
  holder.terminate()
  return n
}

/**
 * The order of events across the two threads: one shared counter, taken inside each transaction (and when
 * an intake write asks). Under SQLite's one write lock it orders the writes exactly; the threads' wall
 * clocks (performance.timeOrigin + now()) did not: a worker's timeOrigin is its own, and a skew of a
 * fraction of a millisecond put an intake write inside a 3 ms processing transaction (a CI flake, twice).
 */
const order = new Int32Array(new SharedArrayBuffer(4))
const tick = () => Atomics.add(order, 0, 1) + 1

/**
 * `batches` group commits of 5 writes each, a millisecond apart, as requests would arrive, while the other
 * thread writes back to back. Each intake row stores when its batch asked (`started`) and when its write
 * ran inside the transaction (`ended`), as ticks of the shared `order`. Returns the rows of both threads.
 */
async function race(batches: number, holderSide: 'processing' | 'sanitizer' = 'processing') {
  const file = join(dir, `turns-${holderSide}.db`)
  const db = openDb(file)
  const turns = new WriteTurns()
  // `asked`: when intake really asks for its turn (the turns' mark set right after it), not when a write is
  // queued: the group committer asks on a later turn of the event loop (setImmediate), and on a loaded
  // machine the other thread began two transactions between the queueing and the ask (a CI flake: 2 overtaken).
  let asked = 0
  const askIntake = turns.intake.bind(turns)
  const askAwait = turns.awaitProcessingTurnEnd.bind(turns)
  turns.intake = <T>(write: () => T): T => {
    asked ||= tick()
    return askIntake(write)
  }
  turns.awaitProcessingTurnEnd = (timeoutMs?: number) => {
    asked ||= tick()
    return askAwait(timeoutMs)
  }
  takeTurnsForTransactions(db, turns, 'intake')
  const committer = new GroupCommitter(db, turns)
  const insert = db.query('INSERT INTO spans (who, started, ended) VALUES (?, ?, ?)')
  const holder = await startHolder(file, turns, 3, holderSide)
  let failed = 0
  for (let i = 0; i < batches; i++) {
    asked = 0
    const results = await Promise.allSettled(Array.from({ length: 5 }, () => committer.run(() => insert.run('intake', asked, tick()))))
    failed += results.filter((r) => r.status === 'rejected').length
    await Bun.sleep(1)
  }
  // A customer move or an admin change: a plain transaction on the intake side.
  asked = 0
  db.transaction(() => insert.run('intake-tx', asked, tick())).immediate()
  const processed = await stopHolder(holder)
  const rows = db.query('SELECT who, started, ended FROM spans ORDER BY started').all() as { who: string; started: number; ended: number }[]
  db.close()
  const intake = rows.filter((r) => r.who.startsWith('intake'))
  const processing = rows.filter((r) => r.who === holderSide)
  // How many processing transactions began while each intake write waited for the lock.
  const overtaken = intake.map((w) => processing.filter((p) => p.started > w.started && p.started < w.ended).length)
  return { intake, processing, processed, overtaken, turns, failed }
}

// The processing thread and the sanitize-ahead thread both give way to intake: an intake commit waits
// for at most the one transaction of theirs under way, while that thread keeps writing.
test.each([
  ['processing', 40],
  ['sanitizer', 30],
] as const)('an intake commit waits for at most the one %s transaction under way, while that thread keeps writing', async (side, batches) => {
  const { intake, processing: other, processed, overtaken, turns, failed } = await race(batches, side)
  expect(failed).toBe(0)
  expect(intake.length).toBe(batches * 5 + 1)
  expect(processed).toBeGreaterThan(0)
  expect(other.length).toBe(processed)
  expect(Math.max(...overtaken)).toBeLessThanOrEqual(1)
  // No intake write falls inside the other thread's transaction.
  for (const w of intake) expect(other.find((p) => w.ended > p.started && w.ended < p.ended)).toBeUndefined()
  // The flags are back at rest: nobody wants or holds the lock.
  expect([...turns.flags.slice(0, 2), ...turns.flags.slice(4, 6)]).toEqual([0, 0, 0, 0])
})

test('the sanitizer goes ahead of the processing thread: each of its writes waits for at most the processing transaction under way', async () => {
  const file = join(dir, 'sanitizer-first.db')
  const db = openDb(file)
  const turns = new WriteTurns()
  takeTurnsForTransactions(db, turns, 'sanitizer')
  const insert = db.query('INSERT INTO spans (who, started, ended) VALUES (?, ?, ?)')
  const holder = await startHolder(file, turns, 3, 'processing')
  for (let i = 0; i < 30; i++) {
    const asked = tick()
    db.transaction(() => insert.run('sanitizer', asked, tick())).immediate()
    await Bun.sleep(1)
  }
  const processed = await stopHolder(holder)
  const rows = db.query('SELECT who, started, ended FROM spans ORDER BY started').all() as { who: string; started: number; ended: number }[]
  db.close()
  const sanitizer = rows.filter((r) => r.who === 'sanitizer')
  const processing = rows.filter((r) => r.who === 'processing')
  expect(sanitizer.length).toBe(30)
  expect(processing.length).toBe(processed)
  expect(processed).toBeGreaterThan(0)
  const overtaken = sanitizer.map((w) => processing.filter((p) => p.started > w.started && p.started < w.ended).length)
  expect(Math.max(...overtaken)).toBeLessThanOrEqual(1)
  expect([...turns.flags.slice(0, 2), ...turns.flags.slice(4, 6)]).toEqual([0, 0, 0, 0])
})

test('a sanitize-ahead thread that died holding its turn (or wanting it) blocks neither intake nor processing', () => {
  const turns = new WriteTurns()
  Atomics.store(turns.flags, 4, 1) // "the sanitizer wants"
  Atomics.store(turns.flags, 5, 1) // "the sanitizer holds"
  turns.releaseSanitizer()
  let ran = 0
  turns.intake(() => ran++)
  turns.processing(() => ran++)
  expect(ran).toBe(2)
})

test('a processing thread that died holding its turn does not block intake: the hold is released', () => {
  const turns = new WriteTurns()
  Atomics.store(turns.flags, 1, 1) // "processing holds", and nobody will release it
  turns.releaseHold()
  let ran = false
  turns.intake(() => (ran = true))
  expect(ran).toBe(true)
})

test('intake commits are recorded for the processing thread to pace itself by', () => {
  const turns = new WriteTurns()
  expect(turns.msSinceIntakeCommit()).toBeGreaterThan(60_000)
  turns.noteIntakeCommit(false)
  expect(turns.msSinceIntakeCommit()).toBeLessThan(1000)
  expect(turns.msSinceIntakeCommit(true)).toBeGreaterThan(60_000)
  turns.noteIntakeCommit(true)
  expect(turns.msSinceIntakeCommit(true)).toBeLessThan(1000)
  // Another thread's view of the same memory sees the same times.
  expect(new WriteTurns(turns.buffer).msSinceIntakeCommit(true)).toBeLessThan(1000)
})

test('a group commit that waits for a processing transaction does not block the event loop meanwhile', async () => {
  const file = join(dir, 'async.db')
  const db = openDb(file)
  const turns = new WriteTurns()
  const committer = new GroupCommitter(db, turns)
  const insert = db.query('INSERT INTO spans (who, started, ended) VALUES (?, ?, ?)')
  const holder = await startHolder(file, turns, 60)
  try {
    for (const deadline = Date.now() + 10_000; !turns.processingHolds() && Date.now() < deadline; ) await Bun.sleep(1)
    expect(turns.processingHolds()).toBe(true)
    let turnsOfTheLoop = 0
    let committed = false
    const spin = () => {
      turnsOfTheLoop++
      if (!committed) setImmediate(spin)
    }
    setImmediate(spin)
    await committer.run(() => insert.run('intake', tick(), tick()))
    committed = true
    // Blocking on the lock would have frozen the loop until the commit; it kept turning instead.
    expect(turnsOfTheLoop).toBeGreaterThan(10)
    expect((db.query("SELECT COUNT(*) AS n FROM spans WHERE who = 'intake'").get() as { n: number }).n).toBe(1)
  } finally {
    await stopHolder(holder)
    db.close()
  }
})
