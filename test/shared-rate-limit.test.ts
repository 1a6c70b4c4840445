/**
 * The spec's rate limits shared by a cluster's nodes (src/http/shared-rate-limit.ts) on a real
 * redis-server: a verdict is taken only from an answer that is this bucket's (the script echoes its key).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startRedis, type RedisServer } from './cluster-env'
import { OutOfStepLink } from './out-of-step-link'
import { createSharedRateLimiters } from '../src/http/shared-rate-limit'
import { ApiError } from '../src/core/errors'
import { Logger } from '../src/core/logger'
import { ManualClock } from '../src/core/clock'
import { RATE_LIMITS } from '../src/http/rate-limit'

let redis: RedisServer
beforeAll(async () => {
  redis = await startRedis()
})
afterAll(async () => {
  await redis?.stop()
})

const refusal = (p: void | Promise<void>) => Promise.resolve(p).then(() => null, (e) => (e instanceof ApiError ? e.code : String(e)))

test('another bucket\'s refusal handed to a take is no verdict (this node\'s share stands in); a bucket emptied in Redis refuses on every node', async () => {
  const clock = new ManualClock(Date.parse('2026-11-25T00:00:00Z'))
  const link = new OutOfStepLink(redis.url, 2_000, 50)
  const links = [link]
  const limits = createSharedRateLimiters(link, clock, 1, () => 1, new Logger('silent'), clock)
  try {
    link.swap([0, 7, 'fixloop:rl:orgKey:another-org'], /^fixloop:rl:orgKey:org-a$/) // another Org's bucket, empty: believed, a 429 with Retry-After 7
    expect(await refusal(limits.orgKey.take('org-a'))).toBeNull()
    await Bun.sleep(80) // the dropped link's pause
    // Its own answers still count: the bucket emptied on this node is empty for a second node too.
    const capacity = RATE_LIMITS.orgKey.capacity
    for (let i = 0; i < capacity; i++) await limits.orgKey.take('org-b')
    const secondLink = new OutOfStepLink(redis.url, 2_000, 50)
    links.push(secondLink)
    const second = createSharedRateLimiters(secondLink, clock, 1, () => 2, new Logger('silent'), clock)
    expect(await refusal(second.orgKey.take('org-b'))).toBe('rate_limited')
  } finally {
    for (const l of links) l.close()
  }
})
