/**
 * Where event streams that are behind (opened with an old cursor, or paused by a slow client) read their
 * backlog: one page per step, streams taken in turn, at most SLICE_MS of steps per event-loop turn, then
 * a timer, so the loop polls sockets (intake, /healthz) between slices. A thousand streams catching up at
 * once then share the slice instead of each reading its page in the same turn.
 */

/**
 * A stream's next page; true while it has more to read (it is then taken again, after the others). Async
 * (the repository is): steps run one after another, never two at once; on SQLite a step's read runs at
 * once, so a slice still ends within its turn.
 */
export type CatchUpStep = () => boolean | Promise<boolean>

/** Work per turn: long enough to read a few pages, short enough that requests wait a few ms at most. */
export const SLICE_MS = 8

export class CatchUpQueue {
  private readonly waiting = new Set<CatchUpStep>()
  private timer: ReturnType<typeof setTimeout> | undefined
  private running = false

  constructor(private readonly sliceMs = SLICE_MS) {}

  /** Queues a step (a no-op when it is queued already); it runs on a later turn, never synchronously. */
  add(step: CatchUpStep): void {
    this.waiting.add(step)
    this.schedule()
  }

  get size(): number {
    return this.waiting.size
  }

  stop(): void {
    clearTimeout(this.timer)
    this.timer = undefined
    this.waiting.clear()
  }

  private schedule(): void {
    // setTimeout, not setImmediate: the next slice waits for the loop's poll for I/O. A running slice
    // takes what is added meanwhile itself, or schedules the next one when it ends.
    if (this.running) return
    this.timer ??= setTimeout(() => void this.run(), 0)
  }

  private async run(): Promise<void> {
    this.timer = undefined
    this.running = true
    const end = performance.now() + this.sliceMs
    try {
      while (this.waiting.size > 0 && performance.now() < end) {
        const step = this.waiting.values().next().value as CatchUpStep
        this.waiting.delete(step)
        let more = false
        try {
          more = await step()
        } catch {
          // A step handles its own failures (the stream closes); one that throws anyway is dropped.
        }
        if (more) this.waiting.add(step)
      }
    } finally {
      this.running = false
    }
    if (this.waiting.size > 0) this.schedule()
  }
}
