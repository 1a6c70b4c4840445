/**
 * The processing thread (a Bun Worker): sanitizes, clusters and routes reports and releases batch
 * windows, on its own SQLite connection, with the App similarity indexes in its own memory. The HTTP
 * thread only takes submissions and answers reads, so intake never waits behind processing, and on a
 * machine with two cores processing runs beside intake instead of between its requests.
 *
 * The same module is the sanitize-ahead thread when started with role `sanitizer` (sanitize-ahead.ts):
 * it only sanitizes ahead of the processing thread during a backlog, and answers no calls.
 *
 * Messages in:  start {file, logLevel, workerOptions, turns, role} · wake · call {id, op, args} ·
 *               drain (stop claiming, keep answering calls) · stop
 * Messages out: ready · wake (this thread queued work the HTTP thread runs, e.g. an agent job) ·
 *               health {ok, reason} every second · reply {id, ok, value | message} · log {text} · stopped
 * The protocol lives in thread.ts, the HTTP thread's side.
 */
import { openDatabase } from '../db/sqlite/client'
import { takeTurnsForTransactions, WriteTurns } from '../db/sqlite/write-turns'
import { systemClock } from '../core/clock'
import { Logger } from '../core/logger'
import { Worker as JobWorker } from './loop'
import { intakePacing, isProcessingKind, PROCESSING_KINDS } from './processing'
import { createSqliteProcessingEngine } from './processing-sqlite'
import type { ClusterPort } from '../dedup/port'
import type { ThreadCall, ThreadStart } from './thread'
import { createSanitizeAhead } from './sanitize-ahead'
import { sqliteStorage, type SqliteStorage } from '../db/sqlite/storage'
import { openSqliteStore } from '../db/sqlite/store'

declare const self: Worker

const HEALTH_EVERY_MS = 1000
const SATURATED_PAUSE_MS = 1000

let stopping: Promise<void> | undefined
let health: ReturnType<typeof setInterval> | undefined
let running: { storage: SqliteStorage; worker: JobWorker; port: ClusterPort } | undefined
let sanitizing: { storage: SqliteStorage; wake: () => void; done: Promise<void>; stop: () => void } | undefined

/** Intake quiet this long before the sanitizer works ahead (the backlog waits; intake's core does not). */
const SANITIZER_QUIET_MS = 250
/** Far enough ahead of the processing thread: look again after this long (it drains ~100 reports in it). */
const SANITIZER_AHEAD_MS = 50
/** Nothing to do ahead: look again after this long, or when new reports are queued. */
const SANITIZER_IDLE_MS = 1000

function startSanitizer(msg: ThreadStart): void {
  const log = new Logger(msg.logLevel, (text) => postMessage({ type: 'log', text }))
  const { sqlite, db } = openDatabase(msg.file, { autoCheckpoint: false, synchronous: 'normal' })
  const turns = new WriteTurns(msg.turns)
  takeTurnsForTransactions(sqlite, turns, 'sanitizer')
  const storage = sqliteStorage(sqlite, db)
  const ahead = createSanitizeAhead(openSqliteStore(storage, systemClock, { turns }).sides.sanitizeAhead, systemClock)
  let stopped = false
  /** Reports sanitized here since the thread started: reported with its health (tests, diagnostics). */
  let sanitizedAhead = 0
  let wakeUp: (() => void) | undefined
  const nap = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => ((wakeUp = undefined), resolve()), ms)
      wakeUp = () => (clearTimeout(timer), (wakeUp = undefined), resolve())
    })
  const loop = async () => {
    while (!stopped) {
      if (turns.msSinceIntakeCommit() < SANITIZER_QUIET_MS) {
        await nap(SANITIZER_QUIET_MS)
        continue
      }
      let examined = 0
      let farAhead = false
      try {
        const done = ahead.chunk()
        examined = done.examined
        farAhead = done.farAhead
        sanitizedAhead += done.sanitized
      } catch (e) {
        // The processing thread sanitizes whatever is left here; this one looks again later.
        log.warn('sanitizing ahead failed; the processing thread sanitizes those reports', { error: e instanceof Error ? e.message : String(e) })
      }
      if (farAhead) await nap(SANITIZER_AHEAD_MS)
      else if (examined === 0) await nap(SANITIZER_IDLE_MS)
      else await new Promise<void>((resolve) => setImmediate(resolve))
    }
  }
  sanitizing = { storage, wake: () => wakeUp?.(), done: loop(), stop: () => ((stopped = true), wakeUp?.()) }
  health = setInterval(() => postMessage({ type: 'health', ok: true, sanitizedAhead }), HEALTH_EVERY_MS)
  postMessage({ type: 'ready' })
  postMessage({ type: 'health', ok: true, sanitizedAhead })
}

function start(msg: ThreadStart): void {
  if (msg.role === 'sanitizer') return startSanitizer(msg)
  const log = new Logger(msg.logLevel, (text) => postMessage({ type: 'log', text }))
  // The checkpointer thread copies the WAL back; this connection never checkpoints on its own.
  const { sqlite, db } = openDatabase(msg.file, { autoCheckpoint: false, synchronous: 'normal' })
  const turns = new WriteTurns(msg.turns)
  takeTurnsForTransactions(sqlite, turns, 'processing')
  // This thread's own connection, as a store of its own: every repository here is built from it.
  const storage = sqliteStorage(sqlite, db)
  const store = openSqliteStore(storage, systemClock, { turns })
  const { wake } = store
  const jobs = store.jobs(PROCESSING_KINDS)
  const pacing = intakePacing(turns)
  // Batches of reports (process-feedback.ts) start once intake has been quiet for 250 ms and commit early
  // as soon as it is back: waiting for the lock, or committing again.
  const processing = createSqliteProcessingEngine(store, systemClock, {
    yieldWhen: () => turns.intakeWaiting() || pacing.busy(),
    mayBatch: () => !turns.intakeWaiting() && turns.msSinceIntakeCommit() >= 250,
  })
  // During an intake burst this thread paces itself like the in-thread worker does (loop.ts): on a machine
  // with few cores its CPU would otherwise come out of intake's (or the load's); the backlog is durable
  // and drains at full speed when the burst ends.
  const worker = new JobWorker(jobs, processing.steps, systemClock, log, {
    ...pacing,
    // One report a second while intake saturates its core: each holds the write lock for its
    // transaction, and on a busy machine that thread can be preempted inside it (intake then waits).
    saturatedPauseMs: SATURATED_PAUSE_MS,
    ...msg.workerOptions,
    leaseOwnerRole: 'processing',
  })
  // Work queued here may be the HTTP thread's (an agent job after a move to `queued`): tell it, once per turn.
  let wakePosted = false
  wake.on((kind) => {
    if (isProcessingKind(kind)) return worker.wake()
    if (wakePosted) return
    wakePosted = true
    setImmediate(() => {
      wakePosted = false
      postMessage({ type: 'wake' })
    })
  })
  running = { storage, worker, port: processing.port }
  void worker.start()
  health = setInterval(() => postMessage({ type: 'health', ...worker.health() }), HEALTH_EVERY_MS)
  postMessage({ type: 'ready' })
  postMessage({ type: 'health', ...worker.health() })
}

async function answer(call: ThreadCall): Promise<void> {
  try {
    if (!running) throw new Error('the processing thread is not running')
    const port = running.port
    let value: unknown
    if (call.op === 'prepare') value = await port.prepare(call.args[0])
    else if (call.op === 'similar') value = await port.similar(call.args[0], call.args[1])
    else if (call.op === 'merge') value = await port.merge(call.args[0], call.args[1])
    else if (call.op === 'rejectSuggestion') value = await port.rejectSuggestion(call.args[0])
    else if (call.op === 'triageState') value = await port.triageState(call.args[0], call.args[1])
    else if (call.op === 'resetLearning') value = await port.resetLearning(call.args[0], call.args[1])
    else if (call.op === 'forgetRemoved') value = await port.forgetRemoved(call.args[0])
    else value = await port.unmerge(call.args[0])
    postMessage({ type: 'reply', id: call.id, ok: true, value })
  } catch (e) {
    postMessage({ type: 'reply', id: call.id, ok: false, message: e instanceof Error ? e.message : String(e) })
  }
}

let draining: Promise<void> | undefined

/**
 * Stops claiming at once (the job or sanitize chunk in hand finishes, the leases go back) while calls
 * are still answered: requests in flight at shutdown may still ask for similar reports or a merge.
 */
function drain(): Promise<void> {
  draining ??= (async () => {
    if (sanitizing) {
      // The chunk in hand commits (or not) as a whole.
      sanitizing.stop()
      await sanitizing.done
    }
    // Finishes the job in hand and hands back its leases.
    if (running) await running.worker.stop()
  })()
  return draining
}

async function stop(): Promise<void> {
  if (health) clearInterval(health)
  await drain()
  if (sanitizing) {
    sanitizing.storage.sqlite.close()
    sanitizing = undefined
  }
  if (running) {
    running.storage.sqlite.close()
    running = undefined
  }
  postMessage({ type: 'stopped' })
}

self.onmessage = (e: MessageEvent) => {
  const msg = e.data as { type: string }
  if (msg.type === 'start') start(msg as ThreadStart)
  else if (msg.type === 'wake') {
    running?.worker.wake()
    sanitizing?.wake()
  }
  else if (msg.type === 'call') void answer(msg as ThreadCall)
  else if (msg.type === 'drain') void drain()
  else if (msg.type === 'stop') {
    stopping ??= stop()
  }
}

