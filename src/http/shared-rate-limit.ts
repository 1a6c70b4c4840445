/**
 * Spec part 8's limits across all nodes of a cluster: one token bucket per key in Valkey/Redis, taken by
 * one Lua script on the server (EVALSHA: atomic, on the Redis server's clock, one round trip). Same
 * buckets, same Retry-After as the in-memory limiter (src/http/rate-limit.ts).
 *
 * When Redis cannot answer (down, unreachable, slower than the link's timeout), a request is never
 * refused for it and never waits: each node falls back to in-memory buckets holding its share of the
 * limit (the limit divided by the live nodes the coordinator counts), so the cluster together stays
 * near the spec's limits. /readyz names `redis` as failing meanwhile (docs/operations.md "Cluster").
 */
import { ApiError } from '../core/errors'
import type { Clock } from '../core/clock'
import type { Logger } from '../core/logger'
import { echoes, RedisUnavailable, type RedisLink } from '../nodes/redis-link'
import { chargeable, RATE_LIMITS, RateLimiter, type BucketSpec, type Limiter, type RateScope } from './rate-limit'
import { luaNowMs } from './redis-now'

// KEYS[1] the bucket; ARGV: capacity, refill per second, tokens wanted, tokens a retry needs, and (tests with
// an injected clock only) the time in epoch ms; without it the Redis server's own clock counts.
// Answers {1, 0, KEYS[1]} when taken, {0, retry-after seconds, KEYS[1]} when refused: the key echoed proves
// the answer is this command's (RedisLink.desynchronized). Tokens are kept as a decimal string.
const TAKE_SCRIPT = `
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local need = tonumber(ARGV[4])
${luaNowMs('ARGV[5]')}
local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(b[1])
local at = tonumber(b[2])
if tokens == nil or at == nil then
  tokens = capacity
  at = now
end
tokens = math.min(capacity, tokens + math.max(0, now - at) / 1000 * rate)
local ok = 0
local retry = 0
if tokens >= want then
  tokens = tokens - want
  ok = 1
else
  retry = math.max(1, math.ceil((need - tokens) / rate))
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(capacity / rate * 1000) + 1000)
return {ok, retry, KEYS[1]}
`
const TAKE_SHA = new Bun.CryptoHasher('sha1').update(TAKE_SCRIPT).digest('hex')

export class SharedRateLimiter implements Limiter {
  private readonly spec: BucketSpec
  /** The in-memory fallback, sized for the live node count it was made for. */
  private fallback: { nodes: number; limiter: RateLimiter } | undefined
  private warnedAt = 0

  constructor(
    private readonly scope: RateScope,
    private readonly link: RedisLink,
    private readonly clock: Clock,
    private readonly multiplier: number,
    private readonly liveNodes: () => number,
    private readonly log: Logger,
    /** Tests that inject a clock: the buckets follow it instead of the Redis server's clock. */
    private readonly testClock?: Clock,
  ) {
    const s = RATE_LIMITS[scope]
    this.spec = { capacity: s.capacity * multiplier, refillPerSecond: s.refillPerSecond * multiplier }
  }

  async take(key: string, tokens = 1, retryNeeds = tokens): Promise<void> {
    const bucket = `fixloop:rl:${this.scope}:${key}`
    let answer: unknown
    try {
      answer = await this.evalTake(bucket, tokens, retryNeeds)
      // Another command's reply (a client out of step with its connection) is not a verdict: this node's share stands in.
      if (!echoes(answer, 2, bucket)) throw this.link.desynchronized('rate limit')
    } catch (e) {
      // A reply error too (a bucket key another writer gave another type: WRONGTYPE): logged once a minute
      // like an outage, not once per request.
      this.noteFallback(e instanceof Error ? e : new Error(String(e)))
      return this.local().take(key, tokens, retryNeeds)
    }
    const [ok, retryAfter] = answer as [number, number]
    if (ok === 1) return
    throw new ApiError('rate_limited', { retryAfterSeconds: retryAfter }).withHeaders({ 'retry-after': String(retryAfter) })
  }

  async charge(key: string, extra: number): Promise<void> {
    const more = chargeable(this.spec, extra)
    if (more > 0) await this.take(key, more, more + 1)
  }

  private async evalTake(bucket: string, tokens: number, retryNeeds: number): Promise<unknown> {
    const args = ['1', bucket, String(this.spec.capacity), String(this.spec.refillPerSecond), String(tokens), String(retryNeeds)]
    if (this.testClock) args.push(String(this.testClock.now()))
    return this.link.evalScript(TAKE_SCRIPT, TAKE_SHA, args)
  }

  /** This node's share of the limit while Redis is away. */
  private local(): RateLimiter {
    const nodes = Math.max(1, this.liveNodes())
    if (this.fallback?.nodes !== nodes) this.fallback = { nodes, limiter: new RateLimiter(RATE_LIMITS[this.scope], this.clock, this.multiplier / nodes) }
    return this.fallback.limiter
  }

  private noteFallback(e: Error): void {
    const now = this.clock.now()
    if (now - this.warnedAt < 60_000) return
    this.warnedAt = now
    const what = e instanceof RedisUnavailable ? 'Redis unavailable' : 'Redis refused the shared rate limit'
    this.log.warn(`${what}: rate limits use this node's share in memory`, { scope: this.scope, liveNodes: this.liveNodes(), error: e.message })
  }
}

/** Every scope's shared limiter over one link. */
export function createSharedRateLimiters(link: RedisLink, clock: Clock, multiplier: number, liveNodes: () => number, log: Logger, testClock?: Clock): Record<RateScope, Limiter> {
  const out = {} as Record<RateScope, Limiter>
  for (const scope of Object.keys(RATE_LIMITS) as RateScope[]) out[scope] = new SharedRateLimiter(scope, link, clock, multiplier, liveNodes, log, testClock)
  return out
}
