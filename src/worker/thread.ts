/**
 * The HTTP thread's side of the processing thread (thread-entry.ts): starts it, wakes it when intake
 * commits work, asks it the clustering questions triage needs (its index is the only one), reads its
 * health for /readyz, restarts it if it dies, and stops it at shutdown after the job in hand.
 */
import type { Logger } from '../core/logger'
import type { ClusterPort } from '../dedup/port'
import type { SimilarEntry } from '../dedup/service'
import type { TriageState } from '../dedup/suggestions'
import type { DecisionKind } from '../dedup/learn'
import type { AuditEntry } from '../modules/audit/entry'
import type { MergeRefusal } from '../dedup/steps'
import type { WorkerOptions } from './loop'

export interface ThreadStart {
  type: 'start'
  file: string
  logLevel: 'info' | 'warn' | 'silent'
  workerOptions: Partial<WorkerOptions>
  turns: SharedArrayBuffer
  /** `sanitizer`: the sanitize-ahead thread (sanitize-ahead.ts) instead of the processing thread. */
  role: 'processing' | 'sanitizer'
}

type Op =
  | { op: 'prepare'; args: [appId: string] }
  | { op: 'similar'; args: [id: string, limit: number] }
  | { op: 'merge'; args: [id: string, leadId: string] }
  | { op: 'unmerge'; args: [id: string] }
  | { op: 'rejectSuggestion'; args: [id: string] }
  | { op: 'triageState'; args: [appId: string, unmergeScore?: number] }
  | { op: 'resetLearning'; args: [appId: string, audit: AuditEntry | null] }
  | { op: 'forgetRemoved'; args: [ids: readonly string[]] }
export type ThreadCall = { type: 'call'; id: number } & Op

/** Where the thread's module is: next to this file from source; under src/ in the compiled binary (a second entry point of "build"). */
function entryUrl(): string {
  const compiled = import.meta.url.includes('/$bunfs/')
  return new URL(compiled ? './worker/thread-entry.ts' : './thread-entry.ts', import.meta.url).href
}

/** A thread silent this long is reported not ready (it beats every second). */
const SILENT_LIMIT_MS = 30_000
const RESTART_DELAY_MS = 1000
const STOP_WAIT_MS = 15_000

/** The write turns the thread shares with this one (src/db/sqlite/write-turns.ts): its buffer, and the holds to release for a thread that died. */
export interface ThreadTurns {
  readonly buffer: SharedArrayBuffer
  releaseHold(): void
  releaseSanitizer(): void
}

export class ProcessingThread implements ClusterPort {
  private thread: Worker | undefined
  private stopped = false
  private lastHealth: { ok: boolean; reason?: string } = { ok: true, reason: 'the processing thread is starting' }
  private startedAt = performance.now()
  private isReady = false
  private lastBeatAt = performance.now()
  private nextCallId = 1
  private calls = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>()
  private wakePosted = false
  private ready: Promise<void> = Promise.resolve()
  private sanitizedAheadCount = 0

  constructor(
    private readonly file: string,
    private readonly turns: ThreadTurns,
    private readonly log: Logger,
    private readonly workerOptions: Partial<WorkerOptions>,
    /** The thread queued work this thread's worker runs. */
    private readonly onWake: () => void,
    private readonly role: ThreadStart['role'] = 'processing',
  ) {}

  /** How this thread is named in logs and health reasons. */
  private get name(): string {
    return this.role === 'processing' ? 'the processing thread' : 'the sanitize-ahead thread'
  }

  /** Clears the write-turn flags a thread that ended abruptly may have left set. */
  private releaseTurns(): void {
    if (this.role === 'processing') this.turns.releaseHold()
    else this.turns.releaseSanitizer()
  }

  start(): void {
    this.stopped = false
    const thread = new Worker(entryUrl())
    this.thread = thread
    this.lastBeatAt = performance.now()
    this.startedAt = this.lastBeatAt
    this.isReady = false
    this.lastHealth = { ok: true, reason: `${this.name} is starting` }
    let markReady!: () => void
    this.ready = new Promise<void>((resolve) => (markReady = resolve))
    thread.onmessage = (e: MessageEvent) => {
      const msg = e.data
      this.lastBeatAt = performance.now()
      if (msg.type === 'ready') {
        this.isReady = true
        markReady()
      }
      else if (msg.type === 'health') {
        this.lastHealth = { ok: msg.ok, reason: msg.reason }
        if (typeof msg.sanitizedAhead === 'number') this.sanitizedAheadCount = msg.sanitizedAhead
      }
      else if (msg.type === 'wake') this.onWake()
      else if (msg.type === 'log') this.log.forward(msg.text)
      else if (msg.type === 'reply') {
        const call = this.calls.get(msg.id)
        this.calls.delete(msg.id)
        if (msg.ok) call?.resolve(msg.value)
        else call?.reject(new Error(msg.message))
      }
    }
    thread.onerror = (e) => {
      e.preventDefault?.()
      this.log.error(`${this.name} failed; restarting it`, { error: e.message })
      this.restart(thread)
    }
    thread.addEventListener('close', () => this.restart(thread))
    const start: ThreadStart = { type: 'start', file: this.file, logLevel: this.log.threshold, workerOptions: this.workerOptions, turns: this.turns.buffer, role: this.role }
    thread.postMessage(start)
  }

  /** A thread that ended without being asked: its questions fail, its write turn is released, a new one starts. */
  private restart(dead: Worker): void {
    if (this.thread !== dead || this.stopped) return
    this.thread = undefined
    this.releaseTurns()
    this.lastHealth = { ok: false, reason: `${this.name} stopped; restarting it` }
    for (const call of this.calls.values()) call.reject(new Error('the processing thread stopped'))
    this.calls.clear()
    dead.terminate()
    setTimeout(() => {
      if (!this.stopped && !this.thread) this.start()
    }, RESTART_DELAY_MS)
  }

  /** Intake committed work: the thread looks for it now (one message per event-loop turn at most). */
  wake(): void {
    if (this.wakePosted || !this.thread) return
    this.wakePosted = true
    setImmediate(() => {
      this.wakePosted = false
      this.thread?.postMessage({ type: 'wake' })
    })
  }

  /** The sanitize-ahead thread: reports it sanitized since it started, as of its last health beat (≤ 1 s old). */
  get sanitizedAhead(): number {
    return this.sanitizedAheadCount
  }

  /** For /readyz: what the thread last said about its job loop, or why it is not there. */
  health(): { ok: boolean; reason?: string } {
    if (!this.thread) return { ok: false, reason: `${this.name} is not running` }
    // Starting takes a few milliseconds (loading its modules, opening its connection): not a failure,
    // unless it takes longer than a thread that stopped answering would.
    if (!this.isReady) {
      const starting = performance.now() - this.startedAt
      return starting > SILENT_LIMIT_MS ? { ok: false, reason: `${this.name} has not started in ${Math.round(starting / 1000)} s` } : this.lastHealth
    }
    const silent = performance.now() - this.lastBeatAt
    if (silent > SILENT_LIMIT_MS) return { ok: false, reason: `${this.name} has not answered for ${Math.round(silent / 1000)} s` }
    return this.lastHealth
  }

  private async call<T>(op: Op): Promise<T> {
    await this.ready
    const thread = this.thread
    if (!thread) throw new Error('the processing thread is not running')
    const id = this.nextCallId++
    return new Promise<T>((resolve, reject) => {
      this.calls.set(id, { resolve: resolve as (v: unknown) => void, reject })
      thread.postMessage({ type: 'call', id, ...op } satisfies ThreadCall)
    })
  }

  prepare(appId: string): Promise<void> {
    return this.call({ op: 'prepare', args: [appId] })
  }
  similar(id: string, limit: number): Promise<SimilarEntry[]> {
    return this.call({ op: 'similar', args: [id, limit] })
  }
  merge(id: string, leadId: string): Promise<MergeRefusal | null> {
    return this.call({ op: 'merge', args: [id, leadId] })
  }
  unmerge(id: string): Promise<void> {
    return this.call({ op: 'unmerge', args: [id] })
  }
  rejectSuggestion(id: string): Promise<void> {
    return this.call({ op: 'rejectSuggestion', args: [id] })
  }
  triageState(appId: string, unmergeScore?: number): Promise<TriageState> {
    return this.call({ op: 'triageState', args: [appId, unmergeScore] })
  }
  resetLearning(appId: string, audit: AuditEntry | null): Promise<Record<DecisionKind, number>> {
    return this.call({ op: 'resetLearning', args: [appId, audit] })
  }
  forgetRemoved(ids: readonly string[]): Promise<void> {
    return this.call({ op: 'forgetRemoved', args: [ids] })
  }

  /** Shutdown begins: the thread claims no more jobs (the one in hand finishes) but still answers calls. */
  stopClaiming(): void {
    this.thread?.postMessage({ type: 'drain' })
  }

  /**
   * Lets the thread finish its job in hand and hand back its leases, waiting at most `waitMs`, then ends
   * it. Returns whether it finished in time; if not, its leases run out or are reclaimed at the next
   * start (lease-owner.ts) and its open transaction, if any, never commits.
   */
  async stop(waitMs = STOP_WAIT_MS): Promise<boolean> {
    this.stopped = true
    const thread = this.thread
    this.thread = undefined
    if (!thread) return true
    let timer: ReturnType<typeof setTimeout> | undefined
    const finished = await new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), Math.max(0, waitMs))
      thread.addEventListener('message', (e: MessageEvent) => e.data?.type === 'stopped' && resolve(true))
      thread.postMessage({ type: 'stop' })
    })
    clearTimeout(timer)
    thread.terminate()
    this.releaseTurns()
    for (const call of this.calls.values()) call.reject(new Error('the server is stopping'))
    this.calls.clear()
    return finished
  }
}
