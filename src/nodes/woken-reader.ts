/**
 * A read of the database that a node runs when woken (a wake-up heard on the Redis channel) and on a
 * safety poll (pub/sub is at-most-once, and Redis may be away): the removal log (removal-follower.ts), the
 * spam decisions by hand (src/abuse/spam-share.ts). One read at a time; a wake during a read asks for one
 * more after it, so none is lost. Anyone who can publish on the channel can send wake-ups (a live node's
 * id is in every message there): a flood woke a read per round trip and kept a connection of every node's
 * pool reading back to back (~1,400 statements a second per node), so reads asked for meanwhile wait
 * WOKEN_GAP_MS after the one before; the poll is unchanged.
 */

/** The least time between the end of a read and the next when wake-ups keep coming. */
export const WOKEN_GAP_MS = 50

export interface WokenReaderOptions {
  /** How often it reads when no wake-up came. */
  pollMs: number
  /** A rest after a read that took `work` (what the read resolved with), besides the gap (default none). */
  restAfter?: (work: number) => number
}

/** A reader's `read` runs here: subclasses say what it reads (resolving with the work it did, for `restAfter`). */
export abstract class WokenReader {
  private timer: ReturnType<typeof setInterval> | undefined
  /** The read under way, and whether another was asked for meanwhile. */
  private running: Promise<void> | undefined
  private again = false
  private halted = false
  /** No read before this (performance.now()). */
  private notBefore = 0

  constructor(private readonly options: WokenReaderOptions) {}

  /** One read; resolves with the work it did, for `restAfter` (ms; anything when there is no rest). */
  protected abstract read(): Promise<number | void>

  /** Stopped (the server's shutdown closes the database next): a read cut off then is no outage to report. */
  protected get stopped(): boolean {
    return this.halted
  }

  start(): void {
    this.stop()
    this.halted = false
    this.timer = setInterval(() => void this.wake(), this.options.pollMs)
    void this.wake()
  }

  stop(): void {
    clearInterval(this.timer)
    this.timer = undefined
    this.halted = true
  }

  /** Asks for one more read after the one under way (a read that left work for the next). */
  protected askAgain(): void {
    this.again = true
  }

  /** Reads now (a wake-up heard, the poll); resolves when the read asked for has run. */
  wake(): Promise<void> {
    if (this.halted) return Promise.resolve()
    if (this.running) {
      this.again = true
      return this.running
    }
    this.running = (async () => {
      try {
        do {
          this.again = false
          const wait = this.notBefore - performance.now()
          if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
          if (this.halted) break
          const work = await this.read()
          this.notBefore = performance.now() + Math.max(this.again ? WOKEN_GAP_MS : 0, this.options.restAfter?.(Number(work ?? 0)) ?? 0)
        } while (this.again && !this.halted)
      } finally {
        this.running = undefined
      }
    })()
    return this.running
  }
}
