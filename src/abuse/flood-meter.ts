/**
 * How busy an App and each of its addresses are, in memory, per node: events (challenges asked,
 * submissions) counted in one-minute windows, the rate estimated from the current window plus the share
 * of the previous one still inside the last minute (a sliding window in two counters). Bounded: at most
 * `maxKeys` keys; when full, keys idle for two windows are dropped, then (a flood of addresses) all of them.
 */
import type { Clock } from '../core/clock'

const WINDOW_MS = 60_000

interface Counter {
  /** Start of the current window (epoch ms, a multiple of WINDOW_MS). */
  start: number
  current: number
  previous: number
}

export class FloodMeter {
  private readonly counters = new Map<string, Counter>()

  constructor(
    private readonly clock: Clock,
    private readonly maxKeys = 50_000,
  ) {}

  /** Counts one event for `key`; its rate over the last minute, this one included. */
  hit(key: string): number {
    const c = this.roll(key, true)!
    c.current++
    return this.rateOf(c)
  }

  /** The events per minute of `key` over the last minute. */
  rate(key: string): number {
    const c = this.roll(key, false)
    return c ? this.rateOf(c) : 0
  }

  private rateOf(c: Counter): number {
    const into = (this.clock.now() - c.start) / WINDOW_MS
    return c.current + c.previous * Math.max(0, 1 - into)
  }

  private roll(key: string, create: boolean): Counter | undefined {
    const start = Math.floor(this.clock.now() / WINDOW_MS) * WINDOW_MS
    let c = this.counters.get(key)
    if (!c) {
      if (!create) return undefined
      if (this.counters.size >= this.maxKeys) this.evict(start)
      c = { start, current: 0, previous: 0 }
      this.counters.set(key, c)
    }
    if (c.start !== start) {
      c.previous = c.start === start - WINDOW_MS ? c.current : 0
      c.current = 0
      c.start = start
    }
    return c
  }

  private evict(start: number): void {
    for (const [k, c] of this.counters) if (c.start < start - WINDOW_MS) this.counters.delete(k)
    if (this.counters.size >= this.maxKeys) this.counters.clear()
  }
}
