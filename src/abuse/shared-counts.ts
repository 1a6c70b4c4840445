/**
 * What the cluster's shared counts (shared-flood-meter.ts, shared-repeat-tracker.ts) have in common: the
 * keys this node used lately, whose counts it reads back (least recently used first, bounded), and the
 * background tick that pushes and reads them, one at a time, warning at most once a minute while Redis
 * cannot take it (a warning per tick would flood the log during an outage).
 */
import type { Clock } from '../core/clock'
import type { Logger } from '../core/logger'
import { RedisUnavailable } from '../nodes/redis-link'

/** Keys used lately → when; at most `max`, the least recently used dropped first (`onDrop` is told). */
export class RecentKeys {
  private readonly usedAt = new Map<string, number>()

  constructor(
    private readonly max: number,
    private readonly onDrop: (key: string) => void,
  ) {}

  use(key: string, now: number): void {
    // Re-inserted: a Map keeps insertion order, so the first key is always the least recently used.
    this.usedAt.delete(key)
    this.usedAt.set(key, now)
    if (this.usedAt.size > this.max) this.drop(this.usedAt.keys().next().value as string)
  }

  /** Drops the keys not used for `idleMs`. */
  forgetIdle(now: number, idleMs: number): void {
    for (const [key, at] of this.usedAt) {
      if (now - at < idleMs) break // the rest are fresher
      this.drop(key)
    }
  }

  has(key: string): boolean {
    return this.usedAt.has(key)
  }

  keys(): string[] {
    return [...this.usedAt.keys()]
  }

  /** The keys used at `since` or later. */
  usedSince(since: number): string[] {
    const out: string[] = []
    for (const [key, at] of this.usedAt) if (at >= since) out.push(key)
    return out
  }

  private drop(key: string): void {
    this.usedAt.delete(key)
    this.onDrop(key)
  }
}

/** Runs `work` every `everyMs` once started, never two at once; its failures are a warning a minute. */
export class BackgroundTick {
  private timer: ReturnType<typeof setInterval> | undefined
  private running = false
  private warnedAt = -Infinity

  constructor(
    private readonly work: () => Promise<void>,
    private readonly everyMs: number,
    private readonly clock: Clock,
    private readonly log: Logger | undefined,
    /** The warning's words: what falls back to this node's own counts. */
    private readonly what: string,
  ) {}

  /** Starts the timer (on the first use: a node that never scores a report never ticks). */
  ensure(): void {
    if (this.timer) return
    this.timer = setInterval(() => void this.tick(), this.everyMs)
    this.timer.unref?.()
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = undefined
  }

  private async tick(): Promise<void> {
    if (this.running) return
    this.running = true
    try {
      await this.work()
    } catch (e) {
      const now = this.clock.now()
      if (now - this.warnedAt >= 60_000) {
        this.warnedAt = now
        const why = e instanceof RedisUnavailable ? 'Redis unavailable' : 'Redis refused the shared counts'
        this.log?.warn(`${why}: ${this.what} count this node's reports only`, { error: e instanceof Error ? e.message : String(e) })
      }
    } finally {
      this.running = false
    }
  }
}
