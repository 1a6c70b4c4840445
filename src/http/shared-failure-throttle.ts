/**
 * The sign-in and password re-entry back-off (src/core/failure-throttle.ts) across all nodes of a
 * cluster. Behind a balancer an attacker's guesses land on every node in turn: with each node counting
 * alone, N nodes would allow N times the free failures and N separate blocks. Here the failures and the
 * block of each key live in Valkey/Redis, updated by one Lua script (atomic, on the Redis server's
 * clock, one round trip), so every node refuses a blocked key.
 *
 * The attempts still under way count on every node too: a burst of parallel guesses spread over N nodes,
 * all sent before the first one failed, would otherwise get N times the free failures checked (each node
 * seeing only its own). Each attempt is a member of the key's pending set in Redis (`fixloop:<cluster>:ftp:…`, scored by its
 * start on the Redis clock) from `sharedBegin` until `end`; a member older than PENDING_STALE_MS (a node
 * killed during a check) no longer counts. When Redis cannot answer, a node never refuses or waits for
 * it: it falls back to its own in-memory counts, which every attempt and failure also updates.
 */
import { randomBytes } from 'node:crypto'
import type { Clock } from '../core/clock'
import { FailureThrottle, PENDING_WAIT_MS, type BackoffSpec, type Throttle, type ThrottleFactory } from '../core/failure-throttle'
import type { Logger } from '../core/logger'
import { echoes, RedisUnavailable, type RedisLink } from '../nodes/redis-link'
import { luaNowMs } from './redis-now'

/** How long an attempt under way counts as pending at most (a password check takes well under a second). */
export const PENDING_STALE_MS = 30_000

// KEYS[1] the key's hash, KEYS[2] its set of attempts under way. ARGV: 'wait' | 'begin' | 'fail' | 'clear' |
// 'done', free failures, base delay ms, max delay ms, forget after ms, the attempt ('' for none), the ms an
// attempt stays pending at most, the ms to wait while pending attempts fill the free failures, and (tests
// with an injected clock only) now in epoch ms.
// 'wait' answers the ms the key must still wait; 'begin' the same, and when 0 adds the attempt to the
// pending set (unless the attempts under way fill the free failures: then it answers the pending wait);
// 'fail', 'clear' and 'done' end the attempt (a failure counts, 'clear' forgets the key) and answer the wait.
// Every answer is {the wait, KEYS[1]}: the key echoed proves the answer is this command's (RedisLink.desynchronized).
const SCRIPT = `
local op = ARGV[1]
local attempt = ARGV[6]
local staleMs = tonumber(ARGV[7])
${luaNowMs('ARGV[9]')}
if op ~= 'begin' and attempt ~= '' then redis.call('ZREM', KEYS[2], attempt) end
if op == 'clear' then
  redis.call('DEL', KEYS[1])
  return {0, KEYS[1]}
end
local free = tonumber(ARGV[2])
local base = tonumber(ARGV[3])
local maxDelay = tonumber(ARGV[4])
local forget = tonumber(ARGV[5])
local h = redis.call('HMGET', KEYS[1], 'failures', 'last', 'blocked')
local failures = tonumber(h[1]) or 0
local last = tonumber(h[2]) or now
local blocked = tonumber(h[3]) or 0
if now - last > forget and now >= blocked then
  failures = 0
  blocked = 0
end
if op == 'fail' then
  failures = failures + 1
  last = now
  local over = failures - free
  if over >= 0 then blocked = now + math.min(maxDelay, base * 2 ^ math.min(over, 40)) end
  redis.call('HSET', KEYS[1], 'failures', failures, 'last', last, 'blocked', blocked)
  redis.call('PEXPIRE', KEYS[1], math.max(forget, blocked - now) + 1000)
end
local wait = math.max(0, blocked - now)
if op == 'begin' and wait == 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - staleMs)
  local pending = redis.call('ZCARD', KEYS[2])
  if pending > 0 and failures + pending >= free then return {tonumber(ARGV[8]), KEYS[1]} end
  redis.call('ZADD', KEYS[2], now, attempt)
  redis.call('PEXPIRE', KEYS[2], staleMs)
end
return {wait, KEYS[1]}
`
const SCRIPT_SHA = new Bun.CryptoHasher('sha1').update(SCRIPT).digest('hex')

export class SharedFailureThrottle implements Throttle {
  private readonly local: FailureThrottle
  private readonly spec: BackoffSpec
  private warnedAt = 0

  constructor(
    /** Names the throttle's keys in Redis (`fixloop:<cluster>:ft:<name>:<key>`, its pending set `…:ftp:…`). */
    private readonly name: string,
    spec: BackoffSpec,
    private readonly link: RedisLink,
    private readonly clock: Clock,
    multiplier: number,
    private readonly log: Logger,
    /** The database's cluster id: another fixloop sharing this Redis keeps its own counts. */
    private readonly cluster: () => Promise<string>,
    /** Tests that inject a clock: the blocks follow it instead of the Redis server's clock. */
    private readonly testClock?: Clock,
  ) {
    this.local = new FailureThrottle(spec, clock, multiplier)
    this.spec = { ...spec, freeFailures: Math.max(1, Math.round(spec.freeFailures * multiplier)) }
  }

  waitMs(key: string): number {
    return this.local.waitMs(key)
  }

  /** The block every node sees, read only (0 when Redis cannot answer: the local counts stand in). */
  async sharedWaitMs(key: string): Promise<number> {
    return (await this.run('wait', key, '')) ?? 0
  }

  /** The block or pending wait every node sees; at 0 the attempt is pending on every node until `end`. */
  async sharedBegin(key: string): Promise<{ waitMs: number; attempt?: string }> {
    const attempt = randomBytes(9).toString('base64url')
    const waitMs = await this.run('begin', key, attempt)
    // Redis could not answer: nothing was added there, the local counts stand in.
    if (waitMs === null) return { waitMs: 0 }
    return waitMs > 0 ? { waitMs } : { waitMs: 0, attempt }
  }

  begin(key: string): void {
    this.local.begin(key)
  }

  async end(key: string, failed: boolean, clearOnSuccess: boolean, attempt?: string): Promise<void> {
    this.local.end(key, failed, clearOnSuccess)
    if (failed) await this.run('fail', key, attempt ?? '')
    else if (clearOnSuccess) await this.run('clear', key, attempt ?? '')
    else if (attempt) await this.run('done', key, attempt)
  }

  /** The script's answer (ms to wait), or null when Redis cannot answer (the local counts stand in). */
  private async run(op: 'wait' | 'begin' | 'fail' | 'clear' | 'done', key: string, attempt: string): Promise<number | null> {
    const s = this.spec
    let cluster: string
    try {
      cluster = await this.cluster()
    } catch (e) {
      this.warn(e)
      return null
    }
    // The pending set under a prefix of its own: no key (user input) can name another key's set.
    const hashKey = `fixloop:${cluster}:ft:${this.name}:${key}`
    const args = ['2', hashKey, `fixloop:${cluster}:ftp:${this.name}:${key}`, op, String(s.freeFailures), String(s.baseDelayMs), String(s.maxDelayMs), String(s.forgetAfterMs), attempt, String(PENDING_STALE_MS), String(PENDING_WAIT_MS)]
    if (this.testClock) args.push(String(this.testClock.now()))
    try {
      const answer = await this.link.evalScript(SCRIPT, SCRIPT_SHA, args)
      // Another command's reply (a client out of step with its connection): the local counts stand in.
      if (!echoes(answer, 1, hashKey)) throw this.link.desynchronized('sign-in throttle')
      return Number(answer[0]) || 0
    } catch (e) {
      this.warn(e)
      return null
    }
  }

  private warn(e: unknown): void {
    const now = this.clock.now()
    if (now - this.warnedAt < 60_000) return
    this.warnedAt = now
    const message = e instanceof Error ? e.message : String(e)
    if (e instanceof RedisUnavailable) this.log.warn('Redis unavailable: sign-in back-off counts on this node only', { throttle: this.name, error: message })
    else this.log.error('shared sign-in back-off failed; counting on this node only', { throttle: this.name, error: message })
  }
}

/** `cluster` is read once it answers (the database may be away at the first sign-in), then kept. */
export function sharedThrottles(link: RedisLink, clock: Clock, multiplier: number, log: Logger, cluster: () => Promise<string>, testClock?: Clock): ThrottleFactory {
  let known: Promise<string> | undefined
  const clusterOnce = () => {
    known ??= cluster().catch((e) => {
      known = undefined
      throw e
    })
    return known
  }
  return (name, spec) => new SharedFailureThrottle(name, spec, link, clock, multiplier, log, clusterOnce, testClock)
}
