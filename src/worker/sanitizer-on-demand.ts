/**
 * The sanitize-ahead thread (thread-entry.ts, role `sanitizer`), started only once there is work for it.
 * It only ever works on `process` jobs at least HEAD_GAP ids past the processing thread's head
 * (sanitize-ahead.ts `chunk`), so with a shorter queue it sits idle: started with the server it cost every
 * start ~0.15 CPU-s (a Bun worker loading the processing modules and opening its own connection) for the
 * rare server that ever sees a backlog. Here the HTTP thread looks whether the queue's ends are HEAD_GAP
 * apart: at start (a backlog left by the last run), shortly after intake queued reports, and every second
 * (as often as the idle thread looked itself), and starts the thread the first time they are. It runs from
 * then on as it always did. The ends are an upper bound of the thread's work (the newest job of any
 * kind), so it starts no later than it would have found something to do.
 */
import type { Logger } from '../core/logger'
import { HEAD_GAP } from './sanitize-ahead'
import type { ProcessingThread } from './thread'

/** As often as the idle thread looked for work itself (thread-entry.ts SANITIZER_IDLE_MS). */
const LOOK_EVERY_MS = 1000
/** After intake queued reports: a burst is looked at once per this, not per report. */
const LOOK_AFTER_WAKE_MS = 100

/** The queue's two ends (the SQLite store's `sides.sanitizeAhead`). */
export interface QueueEnds {
  firstProcessJob(): number | undefined
  lastJob(): number | undefined
}

export class SanitizerOnDemand {
  private armed = false
  private running = false
  private poll: ReturnType<typeof setInterval> | undefined
  private soon: ReturnType<typeof setTimeout> | undefined

  constructor(
    private readonly thread: ProcessingThread,
    private readonly queue: QueueEnds,
    private readonly log: Logger,
  ) {}

  /** Whether the thread was started (a backlog was seen). */
  get started(): boolean {
    return this.running
  }

  /** Reports the thread sanitized ahead (0 while it was never needed). */
  get sanitizedAhead(): number {
    return this.thread.sanitizedAhead
  }

  /** The server starts: the thread starts now if a backlog waits, or when one forms. */
  start(): void {
    if (this.armed || this.running) return
    this.armed = true
    if (this.look()) return
    this.poll = setInterval(() => this.look(), LOOK_EVERY_MS)
    this.poll.unref?.()
  }

  /** Intake queued a `process` job. */
  wake(): void {
    if (this.running) return this.thread.wake()
    if (!this.armed || this.soon) return
    this.soon = setTimeout(() => {
      this.soon = undefined
      this.look()
    }, LOOK_AFTER_WAKE_MS)
    this.soon.unref?.()
  }

  /** Starts the thread if the queue holds work for it; whether it runs now. */
  private look(): boolean {
    if (!this.armed) return this.running
    let due = false
    try {
      const first = this.queue.firstProcessJob()
      const last = first === undefined ? undefined : this.queue.lastJob()
      due = first !== undefined && last !== undefined && last - first >= HEAD_GAP
    } catch (e) {
      // Nothing is lost: the processing thread sanitizes every report itself; the next look tries again.
      this.log.warn('looking for a backlog to sanitize ahead failed', { error: e instanceof Error ? e.message : String(e) })
    }
    if (!due) return false
    this.disarm()
    this.running = true
    this.thread.start()
    return true
  }

  private disarm(): void {
    this.armed = false
    clearInterval(this.poll)
    clearTimeout(this.soon)
    this.poll = undefined
    this.soon = undefined
  }

  /** Shutdown begins (ProcessingThread.stopClaiming); a thread never started has nothing to finish. */
  stopClaiming(): void {
    this.disarm()
    this.thread.stopClaiming()
  }

  /** Ends the thread (ProcessingThread.stop); true at once when it never started. */
  stop(waitMs?: number): Promise<boolean> {
    this.disarm()
    return this.thread.stop(waitMs)
  }
}
