/**
 * The checkpointer thread: copies the WAL back into the database file on its own connection, so the
 * request thread never stalls on a checkpoint (measured: auto-checkpoints on the request thread took
 * POST p99 from ~20 ms to ~200 ms under load). PASSIVE checkpoints never block readers or writers.
 *
 * PASSIVE alone never shrinks the WAL: old frames, raw values a report held before the worker scrubbed
 * it among them, stay in fixloop.db-wal until overwritten (it reached 172 MB after 3,000 reports). So
 * every `truncateMs` a TRUNCATE checkpoint empties the file. It holds the write lock only briefly (the
 * PASSIVE ones leave little to copy) and gives up after `TRUNCATE_WAIT_MS` when a reader holds the log,
 * to try again at the next tick instead of stalling writers, and runs right after a PASSIVE one, so it has
 * little left to copy while it holds the write lock.
 *
 * Messages: {type:'start', file, intervalMs, truncateMs, turns?} → periodic checkpoints; {type:'stop', waitMs?} → one
 * TRUNCATE (waiting at most waitMs for readers), then {type:'stopped', truncated}.
 */
import { Database } from 'bun:sqlite'
import { WriteTurns } from './write-turns'

declare const self: Worker

/**
 * How long a TRUNCATE checkpoint waits for readers and writers before it tries again at the next tick
 * (a second later). It holds the write lock while it waits, so intake waits as long: kept short.
 */
const TRUNCATE_WAIT_MS = 20
const BUSY_TIMEOUT_MS = 5000
/** How long a checkpoint waits before trying again while another connection's checkpoint holds the lock. */
const CHECKPOINT_LOCK_RETRY_MS = 2

let db: Database | undefined
let timer: ReturnType<typeof setInterval> | undefined
let lastTruncateAt = 0
/** Intake's commit times, shared with the HTTP thread (write-turns.ts); absent when started without. */
let turns: WriteTurns | undefined

/**
 * While intake saturates its core, the TRUNCATE waits (PASSIVE checkpoints go on): truncating a WAL that
 * a burst grew to hundreds of MB took 150-400 ms on this project's VM, and the write lock is held for all
 * of it, so every intake commit would wait as long. The processing thread paces itself during a burst
 * too, so few values get scrubbed meanwhile. At most this long, then the TRUNCATE runs regardless.
 */
const MAX_TRUNCATE_DEFER_MS = 60_000
const BURST_QUIET_MS = 1000

function intakeSaturated(): boolean {
  return turns !== undefined && turns.msSinceIntakeCommit(true) < BURST_QUIET_MS
}

/**
 * Runs one checkpoint; true when it completed (SQLite reports busy = 0). `untilMs` (Date.now()): while
 * another connection runs a checkpoint of its own, try again until then. SQLite answers that case at once
 * (busy 1, log -1: the checkpoint lock is taken) without calling the busy handler that busy_timeout sets,
 * so the wait for readers and writers never covered it: at a stop within seconds of the start, the last
 * TRUNCATE met such a checkpoint 3 times in 4 and gave up in a millisecond, leaving the WAL for the next
 * start ("the WAL is left for the next start to checkpoint"); a retry a few milliseconds later succeeds.
 */
function checkpoint(mode: 'PASSIVE' | 'TRUNCATE', untilMs = 0): boolean {
  try {
    let row = db?.query(`PRAGMA wal_checkpoint(${mode})`).get() as { busy: number; log: number } | null
    while (row?.busy === 1 && row.log === -1 && Date.now() < untilMs) {
      Bun.sleepSync(CHECKPOINT_LOCK_RETRY_MS)
      row = db?.query(`PRAGMA wal_checkpoint(${mode})`).get() as { busy: number; log: number } | null
    }
    // The heartbeat the main thread's readiness check reads.
    postMessage({ type: 'beat' })
    return row?.busy === 0
  } catch (e) {
    // The code too: the main thread logs a storage outage (read-only remount, full disk) once per 30 s.
    postMessage({ type: 'error', message: e instanceof Error ? e.message : String(e), code: (e as { code?: unknown }).code })
    return false
  }
}

/** `waitMs`: how long the TRUNCATE may wait for readers and writers, counted from `since` (Date.now()). */
function truncate(waitMs: number, since = Date.now()): boolean {
  // A TRUNCATE blocks writers while it copies frames and syncs the database file (measured: intake commits
  // waited up to ~230 ms behind it). A PASSIVE checkpoint first does that copying and syncing without
  // blocking anyone, so the TRUNCATE that follows has (almost) nothing left to copy: it only resets the file.
  checkpoint('PASSIVE')
  db?.run(`PRAGMA busy_timeout = ${Math.max(0, Math.round(since + waitMs - Date.now()))}`)
  const done = checkpoint('TRUNCATE', since + waitMs)
  if (done) lastTruncateAt = Date.now()
  db?.run(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`)
  return done
}

function tick(truncateMs: number): void {
  const since = Date.now() - lastTruncateAt
  if (since >= truncateMs && (since >= MAX_TRUNCATE_DEFER_MS || !intakeSaturated())) truncate(TRUNCATE_WAIT_MS)
  else checkpoint('PASSIVE')
}

self.onmessage = (event: MessageEvent) => {
  const msg = event.data as { type: 'start'; file: string; intervalMs: number; truncateMs: number; turns?: SharedArrayBuffer } | { type: 'stop'; waitMs?: number }
  if (msg.type === 'start') {
    turns = msg.turns ? new WriteTurns(msg.turns) : undefined
    db = new Database(msg.file)
    db.run(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`)
    lastTruncateAt = Date.now()
    timer = setInterval(() => tick(msg.truncateMs), msg.intervalMs)
    postMessage({ type: 'started' })
  } else if (msg.type === 'stop') {
    if (timer) clearInterval(timer)
    // Within the time the stop allows: a reader holding the WAL makes it give up rather than hold the exit.
    const truncated = truncate(Math.min(BUSY_TIMEOUT_MS, msg.waitMs ?? BUSY_TIMEOUT_MS))
    db?.close()
    db = undefined
    postMessage({ type: 'stopped', truncated })
  }
}
