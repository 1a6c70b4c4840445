/**
 * Token buckets in memory, refilled continuously (spec part 8). One limiter per scope; keys are
 * opaque strings built by the caller (never raw credentials: `sk_` keys are keyed by key id).
 * Buckets idle long enough to be full again are swept, so memory stays bounded under many keys.
 */
import type { Clock } from '../core/clock'
import { ApiError } from '../core/errors'

export interface BucketSpec {
  /** Most tokens a bucket holds: the burst allowed. */
  capacity: number
  /** Tokens added per second. */
  refillPerSecond: number
}

/**
 * A limiter of one scope: in memory (this file, the embedded mode) or shared by the nodes of a cluster
 * (src/http/shared-rate-limit.ts: a promise, one Redis round trip). Callers await only a promise.
 */
export interface Limiter {
  take(key: string, tokens?: number, retryNeeds?: number): void | Promise<void>
  charge(key: string, extra: number): void | Promise<void>
}

/**
 * The extra tokens `charge` takes for an expensive request: capped one below the bucket's capacity, so a
 * retry (which takes its first token too) can always succeed. 0: nothing more to take.
 */
export function chargeable(spec: BucketSpec, extra: number): number {
  return Math.max(0, Math.min(Math.floor(extra), Math.floor(spec.capacity) - 1))
}

interface Bucket {
  tokens: number
  updatedAt: number
}

export class RateLimiter implements Limiter {
  private buckets = new Map<string, Bucket>()
  private lastSweep = 0
  private readonly spec: BucketSpec

  constructor(
    spec: BucketSpec,
    private readonly clock: Clock,
    multiplier = 1,
  ) {
    this.spec = { capacity: spec.capacity * multiplier, refillPerSecond: spec.refillPerSecond * multiplier }
  }

  /**
   * Takes `tokens` (default one) or throws 429 rate_limited with Retry-After in whole seconds (at least 1):
   * how long until the bucket holds `retryNeeds` (default `tokens`), what the retried request will take.
   */
  take(key: string, tokens = 1, retryNeeds = tokens): void {
    const now = this.clock.now()
    this.sweep(now)
    const { capacity, refillPerSecond } = this.spec
    let b = this.buckets.get(key)
    if (!b) {
      b = { tokens: capacity, updatedAt: now }
      this.buckets.set(key, b)
    } else {
      // Never a negative refill: the wall clock stepped back (NTP, a VM restored) would otherwise drain every
      // active bucket by as much as it stepped, an hour of 429s for an hour's step.
      b.tokens = Math.min(capacity, b.tokens + (Math.max(0, now - b.updatedAt) / 1000) * refillPerSecond)
      b.updatedAt = now
    }
    if (b.tokens >= tokens) {
      b.tokens -= tokens
      return
    }
    const retryAfter = Math.max(1, Math.ceil((retryNeeds - b.tokens) / refillPerSecond))
    throw new ApiError('rate_limited', { retryAfterSeconds: retryAfter }).withHeaders({ 'retry-after': String(retryAfter) })
  }

  /**
   * After `take(key)` let the request in: takes `extra` more tokens for an expensive request (capped so that
   * a retry can always succeed), or throws 429 with Retry-After for the whole request (`1 + extra`). The
   * token taken first is not given back: the request was read.
   */
  charge(key: string, extra: number): void {
    const more = chargeable(this.spec, extra)
    if (more > 0) this.take(key, more, more + 1)
  }

  get size(): number {
    return this.buckets.size
  }

  /** Every 10 s, drop buckets that would be full by now: they carry no state worth keeping. */
  private sweep(now: number): void {
    // `now < lastSweep`: the clock stepped back; sweeping then, not an hour later, keeps memory bounded.
    if (now - this.lastSweep < 10_000 && now >= this.lastSweep) return
    this.lastSweep = now
    const fullAfterMs = (this.spec.capacity / this.spec.refillPerSecond) * 1000
    for (const [key, b] of this.buckets) {
      if (now - b.updatedAt >= fullAfterMs) this.buckets.delete(key)
    }
  }
}

/** Spec part 8's ceilings per minute as buckets: capacity = the ceiling, refilled evenly over a minute. */
export const RATE_LIMITS = {
  publicSubmit: { capacity: 60, refillPerSecond: 1 },
  privateSubmit: { capacity: 120, refillPerSecond: 2 },
  publicPresign: { capacity: 120, refillPerSecond: 2 },
  privatePresign: { capacity: 240, refillPerSecond: 4 },
  // GET /v1/widget/challenge (proof of work): a widget asks one per submission and one per upload URL.
  publicChallenge: { capacity: 120, refillPerSecond: 2 },
  privateChallenge: { capacity: 240, refillPerSecond: 4 },
  // GET /v1/widget/config: one per page load (and the browser caches it for a minute).
  publicConfig: { capacity: 120, refillPerSecond: 2 },
  privateConfig: { capacity: 240, refillPerSecond: 4 },
  orgKey: { capacity: 100, refillPerSecond: 10 },
  // Not the spec's, but per client address like its widget limits, and shared by a cluster's nodes the same
  // way: each node counting alone let an address spreading its requests over N nodes have N times these.
  // POST /admin/api/setup: ten tries of the setup link, then one every six seconds.
  setupLink: { capacity: 10, refillPerSecond: 1 / 6 },
  // GET /admin/oidc/start: a burst of 30, then one a second. A person starts a few a day; each start hands
  // out a flow whose state the callback then claims as spent for ten minutes (sso-flow.ts).
  ssoStart: { capacity: 30, refillPerSecond: 1 },
} as const satisfies Record<string, BucketSpec>

export type RateScope = keyof typeof RATE_LIMITS

export function createRateLimiters(clock: Clock, multiplier: number): Record<RateScope, RateLimiter> {
  const out = {} as Record<RateScope, RateLimiter>
  for (const scope of Object.keys(RATE_LIMITS) as RateScope[]) out[scope] = new RateLimiter(RATE_LIMITS[scope], clock, multiplier)
  return out
}
