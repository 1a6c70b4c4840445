/**
 * How busy an App and each of its address keys are, in memory, on this node (a cluster's nodes share their
 * counts through shared-flood-meter.ts, which keeps this node's in one of these): events (solved work spent,
 * submissions) counted in windows of `windowMs` (a minute unless told), the rate estimated from the
 * current window plus the share of the previous one still inside the last window (a sliding window in two
 * counters). So a count decays by itself: two windows after the last event it is 0. Bounded: at most
 * `maxKeys` keys; when full, keys idle for two windows are dropped, then (a flood of addresses) all of them.
 */
import type { Clock } from '../core/clock'

/** A meter as its readers use it: this file's (one node), or src/abuse/shared-flood-meter.ts (a cluster's). */
export interface Meter {
  /** Counts one event for `key`; its count over the last window, this one included. */
  hit(key: string): number
  /** The events of `key` over the last window. */
  rate(key: string): number
}

interface Counter {
  /** Start of the current window (epoch ms, a multiple of the window). */
  start: number
  current: number
  previous: number
}

export class FloodMeter implements Meter {
  private readonly counters = new Map<string, Counter>()

  constructor(
    private readonly clock: Clock,
    private readonly maxKeys = 50_000,
    private readonly windowMs = 60_000,
  ) {}

  /** Counts one event for `key`; its count over the last window, this one included. */
  hit(key: string): number {
    const c = this.roll(key, true)!
    c.current++
    return this.rateOf(c)
  }

  /** The events of `key` over the last window. */
  rate(key: string): number {
    const c = this.roll(key, false)
    return c ? this.rateOf(c) : 0
  }

  private rateOf(c: Counter): number {
    const into = (this.clock.now() - c.start) / this.windowMs
    return c.current + c.previous * Math.max(0, 1 - into)
  }

  private roll(key: string, create: boolean): Counter | undefined {
    const start = Math.floor(this.clock.now() / this.windowMs) * this.windowMs
    let c = this.counters.get(key)
    if (!c) {
      if (!create) return undefined
      if (this.counters.size >= this.maxKeys) this.evict(start)
      c = { start, current: 0, previous: 0 }
      this.counters.set(key, c)
    }
    if (c.start !== start) {
      c.previous = c.start === start - this.windowMs ? c.current : 0
      c.current = 0
      c.start = start
    }
    return c
  }

  private evict(start: number): void {
    for (const [k, c] of this.counters) if (c.start < start - this.windowMs) this.counters.delete(k)
    if (this.counters.size >= this.maxKeys) this.counters.clear()
  }
}
