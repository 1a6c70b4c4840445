/**
 * Exponential back-off on failures (wrong passwords), kept in memory per key. Unlike a token bucket,
 * only failures count: a caller who gets it right is never slowed down by its own attempts, and a key
 * nobody fails on is never blocked. After `freeFailures` failures in a row the key is blocked for
 * `baseDelayMs`, then twice as long after each further failure, up to `maxDelayMs`. A blocked attempt is
 * refused before the password is checked and is not counted (so waiting is the only way forward, and
 * hammering a blocked key does not lengthen anyone's block). A key quiet for `forgetAfterMs` starts over.
 *
 * Keys are opaque strings built by the caller. Memory stays bounded: forgotten keys are swept, and past
 * `maxKeys` the least recently failed key is dropped.
 */
import type { Clock } from './clock'
import { ApiError } from './errors'

export interface BackoffSpec {
  freeFailures: number
  baseDelayMs: number
  maxDelayMs: number
  forgetAfterMs: number
}

interface Entry {
  failures: number
  lastFailureAt: number
  blockedUntil: number
}

export class FailureThrottle {
  private entries = new Map<string, Entry>()
  private lastSweep = 0
  private readonly spec: BackoffSpec

  constructor(
    spec: BackoffSpec,
    private readonly clock: Clock,
    /** FIXLOOP_RATE_LIMIT_MULTIPLIER: scales the free failures, as it scales every other ceiling. */
    multiplier = 1,
    private readonly maxKeys = 50_000,
  ) {
    this.spec = { ...spec, freeFailures: Math.max(1, Math.round(spec.freeFailures * multiplier)) }
  }

  /** Milliseconds the key must still wait (0: it may try now). */
  waitMs(key: string): number {
    const e = this.live(key, this.clock.now())
    return e ? Math.max(0, e.blockedUntil - this.clock.now()) : 0
  }

  /** Counts one failure for the key (and blocks it once past the free ones). */
  fail(key: string): void {
    const now = this.clock.now()
    this.sweep(now)
    const e = this.live(key, now) ?? { failures: 0, lastFailureAt: now, blockedUntil: 0 }
    e.failures += 1
    e.lastFailureAt = now
    const over = e.failures - this.spec.freeFailures
    if (over >= 0) e.blockedUntil = now + Math.min(this.spec.maxDelayMs, this.spec.baseDelayMs * 2 ** Math.min(over, 40))
    // Re-inserted: the map's order is the order of last failure, so the oldest is dropped first.
    this.entries.delete(key)
    this.entries.set(key, e)
    if (this.entries.size > this.maxKeys) this.entries.delete(this.entries.keys().next().value!)
  }

  /** Forgets the key's failures (after a success). */
  clear(key: string): void {
    this.entries.delete(key)
  }

  get size(): number {
    return this.entries.size
  }

  private live(key: string, now: number): Entry | undefined {
    const e = this.entries.get(key)
    if (e && now - e.lastFailureAt > this.spec.forgetAfterMs && now >= e.blockedUntil) {
      this.entries.delete(key)
      return undefined
    }
    return e
  }

  /** Once a minute, drops keys quiet long enough to be forgotten. */
  private sweep(now: number): void {
    if (now - this.lastSweep < 60_000) return
    this.lastSweep = now
    for (const [key, e] of this.entries) {
      if (now - e.lastFailureAt > this.spec.forgetAfterMs && now >= e.blockedUntil) this.entries.delete(key)
    }
  }
}

/** Refuses with 429 rate_limited and Retry-After when any of the keys must still wait. */
export function refuseWhileBlocked(checks: [FailureThrottle, string][]): void {
  let waitMs = 0
  for (const [throttle, key] of checks) waitMs = Math.max(waitMs, throttle.waitMs(key))
  if (waitMs <= 0) return
  const retryAfter = Math.max(1, Math.ceil(waitMs / 1000))
  throw new ApiError('rate_limited', { retryAfterSeconds: retryAfter }).withHeaders({ 'retry-after': String(retryAfter) })
}
