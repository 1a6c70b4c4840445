/**
 * Exponential back-off on failures (wrong passwords), kept in memory per key. Unlike a token bucket,
 * only failures count: a caller who gets it right is never slowed down by its own attempts, and a key
 * nobody fails on is never blocked. After `freeFailures` failures in a row the key is blocked for
 * `baseDelayMs`, then twice as long after each further failure, up to `maxDelayMs`. A blocked attempt is
 * refused before the password is checked and is not counted (so waiting is the only way forward, and
 * hammering a blocked key does not lengthen anyone's block). A key quiet for `forgetAfterMs` starts over.
 *
 * Checks still under way count as failures until they end: a burst of parallel attempts, all started
 * before the first one failed, cannot buy more than the free failures (guard() does the bookkeeping).
 *
 * Keys are opaque strings built by the caller. Memory stays bounded: forgotten keys are swept, and past
 * `maxKeys` the least recently used key is dropped.
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
  /** Attempts let through whose outcome is not known yet. */
  pending: number
  lastFailureAt: number
  blockedUntil: number
}

/**
 * What guard() needs of a throttle: this in-memory one, or the cluster's shared one
 * (src/http/shared-failure-throttle.ts), whose answers come from Redis.
 */
export interface Throttle {
  /** What this process knows, synchronously: guard() checks it and begins in one go (no await between). */
  waitMs(key: string): number
  /**
   * What the other nodes know (the shared throttle), asked after the attempt has begun here: the ms to
   * wait, or 0 with the attempt counted as pending on every node until `end` is given its `attempt` back
   * (the attempts under way on the other nodes count here as this node's own do).
   */
  sharedBegin?(key: string): Promise<{ waitMs: number; attempt?: string }>
  begin(key: string): void
  end(key: string, failed: boolean, clearOnSuccess: boolean, attempt?: string): void | Promise<void>
}

/** How long a caller waits when only pending attempts (not yet failures) fill the free ones. */
export const PENDING_WAIT_MS = 1000

export class FailureThrottle implements Throttle {
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
    const now = this.clock.now()
    const e = this.live(key, now)
    if (!e) return 0
    // A block longer than the longest delay means the wall clock stepped back (NTP, a VM restored): cut
    // to that, or the step would be added to the wait.
    if (e.blockedUntil - now > this.spec.maxDelayMs) e.blockedUntil = now + this.spec.maxDelayMs
    const blocked = Math.max(0, e.blockedUntil - now)
    if (blocked > 0 || e.pending === 0 || e.failures + e.pending < this.spec.freeFailures) return blocked
    return PENDING_WAIT_MS
  }

  /** An attempt is let through: it counts against the free failures until end() says how it went. */
  begin(key: string): void {
    const now = this.clock.now()
    const e = this.live(key, now) ?? this.track(key, { failures: 0, pending: 0, lastFailureAt: now, blockedUntil: 0 })
    e.pending += 1
  }

  /** The attempt begun for this key ended: a failure counts, a success clears the key when `clearOnSuccess`. */
  end(key: string, failed: boolean, clearOnSuccess: boolean): void {
    const e = this.entries.get(key)
    if (e) e.pending = Math.max(0, e.pending - 1)
    if (failed) this.fail(key)
    else if (clearOnSuccess) this.clear(key)
    else if (e && e.failures === 0 && e.pending === 0) this.entries.delete(key)
  }

  /** Counts one failure for the key (and blocks it once past the free ones). */
  fail(key: string): void {
    const now = this.clock.now()
    this.sweep(now)
    const e = this.live(key, now) ?? { failures: 0, pending: 0, lastFailureAt: now, blockedUntil: 0 }
    e.failures += 1
    e.lastFailureAt = now
    const over = e.failures - this.spec.freeFailures
    if (over >= 0) e.blockedUntil = now + Math.min(this.spec.maxDelayMs, this.spec.baseDelayMs * 2 ** Math.min(over, 40))
    this.track(key, e)
  }

  /** (Re-)inserts: the map's order is the order of last use, so past maxKeys the oldest is dropped. */
  private track(key: string, e: Entry): Entry {
    this.entries.delete(key)
    this.entries.set(key, e)
    if (this.entries.size > this.maxKeys) this.entries.delete(this.entries.keys().next().value!)
    return e
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
    if (e && e.pending === 0 && now - e.lastFailureAt > this.spec.forgetAfterMs && now >= e.blockedUntil) {
      this.entries.delete(key)
      return undefined
    }
    return e
  }

  /** Once a minute, drops keys quiet long enough to be forgotten. */
  private sweep(now: number): void {
    if (now - this.lastSweep < 60_000 && now >= this.lastSweep) return
    this.lastSweep = now
    for (const [key, e] of this.entries) {
      if (e.pending === 0 && now - e.lastFailureAt > this.spec.forgetAfterMs && now >= e.blockedUntil) this.entries.delete(key)
    }
  }
}

/** One throttle and the key an attempt is charged to; `clearOnSuccess`: a success forgets the key's failures. */
export interface ThrottleKey {
  throttle: Throttle
  key: string
  clearOnSuccess: boolean
}

/**
 * Runs one password check under the throttles: 429 rate_limited with Retry-After (and no check) while any
 * key must wait; otherwise the attempt counts as pending on every key until it ends, then as a failure
 * when `isFailure(error)` says so.
 */
export async function guard<T>(keys: ThrottleKey[], run: () => Promise<T>, isFailure: (error: unknown) => boolean): Promise<T> {
  // This process's view is checked and the attempt begun in the same tick: a burst of parallel attempts
  // sees each other as pending. Only then the other nodes' view (Redis), which takes a round trip.
  refuseWhileWaiting(Math.max(0, ...keys.map(({ throttle, key }) => throttle.waitMs(key))))
  for (const { throttle, key } of keys) throttle.begin(key)
  const shared: { waitMs: number; attempt?: string }[] = await Promise.all(keys.map(({ throttle, key }) => throttle.sharedBegin?.(key) ?? { waitMs: 0 }))
  const sharedWait = Math.max(0, ...shared.map((s) => s.waitMs))
  if (sharedWait > 0) {
    // Refused before the check: not a failure, nothing to clear (the keys that let it begin forget it).
    await Promise.all(keys.map(({ throttle, key }, i) => throttle.end(key, false, false, shared[i].attempt)))
    refuseWhileWaiting(sharedWait)
  }
  let failed = false
  let succeeded = false
  try {
    const out = await run()
    succeeded = true
    return out
  } catch (e) {
    failed = isFailure(e)
    throw e
  } finally {
    // Only a success forgets failures: an error that is no failure (a sign-in whose right password still
    // waits for its TOTP code) neither counts nor clears. It cleared, and a request with the password and
    // no code every few guesses gave 20 code guesses per address instead of the pair's 5.
    await Promise.all(keys.map(({ throttle, key, clearOnSuccess }, i) => throttle.end(key, failed, clearOnSuccess && succeeded, shared[i].attempt)))
  }
}

/** 429 rate_limited with Retry-After while `waitMs` > 0. */
function refuseWhileWaiting(waitMs: number): void {
  if (waitMs <= 0) return
  const retryAfter = Math.max(1, Math.ceil(waitMs / 1000))
  throw new ApiError('rate_limited', { retryAfterSeconds: retryAfter }).withHeaders({ 'retry-after': String(retryAfter) })
}

/** Makes the throttles of one process: in memory here, shared through Redis in cluster mode (src/http/shared-failure-throttle.ts). */
export type ThrottleFactory = (name: string, spec: BackoffSpec) => Throttle

export function localThrottles(clock: Clock, multiplier: number): ThrottleFactory {
  return (_name, spec) => new FailureThrottle(spec, clock, multiplier)
}
