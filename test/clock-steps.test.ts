/**
 * The wall clock stepping back (an NTP correction, a VM restored from a snapshot) must not lock callers
 * out: the in-memory rate limits and failure throttles read it, and an hour's step drained every active
 * bucket by an hour of refill (every key 429 for an hour) and added an hour to every sign-in block.
 */
import { expect, test } from 'bun:test'
import { ManualClock } from '../src/core/clock'
import { RateLimiter } from '../src/http/rate-limit'
import { FailureThrottle } from '../src/core/failure-throttle'
import { ApiError } from '../src/core/errors'

const HOUR = 3_600_000

function status(f: () => void): number {
  try {
    f()
    return 200
  } catch (e) {
    return e instanceof ApiError ? e.status : 500
  }
}

test('a rate limit bucket: the clock stepped back an hour, it refills from there, and its keys are still swept', () => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 12))
  const limiter = new RateLimiter({ capacity: 60, refillPerSecond: 1 }, clock)
  for (let i = 0; i < 60; i++) expect(status(() => limiter.take('client'))).toBe(200)
  expect(status(() => limiter.take('client'))).toBe(429)
  clock.set(clock.now() - HOUR)
  // Refilled from the step on: a second after a refusal, a token is back (before: the bucket was 3,600
  // tokens short, an hour of 429s).
  expect(status(() => limiter.take('client'))).toBe(429)
  clock.advance(1000)
  expect(status(() => limiter.take('client'))).toBe(200)
  expect(status(() => limiter.take('client'))).toBe(429)
  // Buckets left full by quiet keys are dropped on the stepped clock too, not an hour later.
  for (let i = 0; i < 100; i++) limiter.take(`other-${i}`)
  clock.advance(61_000)
  limiter.take('trigger-sweep')
  expect(limiter.size).toBeLessThanOrEqual(2)
})

test('a failure throttle: a block never outlasts the longest delay after the clock stepped back', () => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 12))
  const spec = { freeFailures: 2, baseDelayMs: 1000, maxDelayMs: 60_000, forgetAfterMs: HOUR }
  const throttle = new FailureThrottle(spec, clock)
  for (let i = 0; i < 10; i++) throttle.fail('admin')
  expect(throttle.waitMs('admin')).toBe(60_000)
  clock.set(clock.now() - HOUR)
  expect(throttle.waitMs('admin')).toBe(60_000)
  clock.advance(60_000)
  expect(throttle.waitMs('admin')).toBe(0)
})
