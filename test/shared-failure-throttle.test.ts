/**
 * The sign-in back-off across the nodes of a cluster (src/http/shared-failure-throttle.ts), on a real
 * redis-server: guesses spread over two nodes are counted together, a block on one node holds on the
 * other, a success clears it everywhere, quiet keys are forgotten, and a node whose Redis is gone keeps
 * counting on its own instead of failing sign-in.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startRedis, type RedisServer } from './cluster-env'
import { RedisLink } from '../src/nodes/redis-link'
import { guard, localThrottles, type BackoffSpec, type ThrottleFactory } from '../src/core/failure-throttle'
import { PENDING_STALE_MS, sharedThrottles, type SharedFailureThrottle } from '../src/http/shared-failure-throttle'
import { ApiError } from '../src/core/errors'
import { Logger } from '../src/core/logger'
import { ManualClock } from '../src/core/clock'

let redis: RedisServer
const links: RedisLink[] = []
const spec: BackoffSpec = { freeFailures: 4, baseDelayMs: 10_000, maxDelayMs: 60_000, forgetAfterMs: 3_600_000 }
const silent = new Logger('silent')
const cluster = async () => 'c1'

beforeAll(async () => {
  redis = await startRedis()
})
afterAll(async () => {
  for (const l of links) l.close()
  await redis?.stop()
})

function link(url = redis.url) {
  const l = new RedisLink(url)
  links.push(l)
  return l
}

class WrongPassword extends Error {}
const wrong = (e: unknown) => e instanceof WrongPassword

/** One attempt through guard(): 'failed', 'ok' or 'blocked' (429 before the password is checked). */
async function attempt(throttles: ThrottleFactory, name: string, key: string, correct: boolean, check?: () => Promise<void>): Promise<'failed' | 'ok' | 'blocked'> {
  const throttle = throttles(name, spec)
  try {
    await guard([{ throttle, key, clearOnSuccess: true }], async () => {
      await check?.()
      if (!correct) throw new WrongPassword()
    }, wrong)
    return 'ok'
  } catch (e) {
    if (e instanceof WrongPassword) return 'failed'
    if (e instanceof ApiError && e.code === 'rate_limited') return 'blocked'
    throw e
  }
}

test('failures on two nodes add up: the key is blocked on both after the free failures of ONE node', async () => {
  const clock = new ManualClock(Date.parse('2026-11-25T00:00:00Z'))
  const nodeA = sharedThrottles(link(), clock, 1, silent, cluster, clock)
  const nodeB = sharedThrottles(link(), clock, 1, silent, cluster, clock)
  const outcomes: string[] = []
  // Alternate nodes, as a round-robin balancer would: 4 free failures in all, then both refuse.
  for (let i = 0; i < 6; i++) outcomes.push(await attempt(i % 2 === 0 ? nodeA : nodeB, 'sign-in:pair', 'alice\n203.0.113.9', false))
  expect(outcomes).toEqual(['failed', 'failed', 'failed', 'failed', 'blocked', 'blocked'])
  expect(await attempt(nodeA, 'sign-in:pair', 'alice\n203.0.113.9', true)).toBe('blocked')
  expect(await attempt(nodeB, 'sign-in:pair', 'alice\n203.0.113.9', true)).toBe('blocked')

  // The same guesses on two separate in-memory throttles (what every node did before): never blocked.
  const localA = localThrottles(clock, 1)('sign-in:pair', spec)
  const localB = localThrottles(clock, 1)('sign-in:pair', spec)
  const local: string[] = []
  for (let i = 0; i < 6; i++) local.push(await attempt(() => (i % 2 === 0 ? localA : localB), 'x', 'k', false))
  expect(local).not.toContain('blocked')
})

test('the block ends on every node after its delay; the next failure doubles it; a success clears it everywhere', async () => {
  const clock = new ManualClock(Date.parse('2026-11-25T01:00:00Z'))
  const nodeA = sharedThrottles(link(), clock, 1, silent, cluster, clock)
  const nodeB = sharedThrottles(link(), clock, 1, silent, cluster, clock)
  const key = 'bob\n198.51.100.7'
  for (let i = 0; i < 4; i++) expect(await attempt(nodeA, 'sign-in:pair', key, false)).toBe('failed')
  expect(await attempt(nodeB, 'sign-in:pair', key, false)).toBe('blocked')
  const throttle = nodeB('sign-in:pair', spec)
  expect(await (throttle as SharedFailureThrottle).sharedWaitMs(key)).toBe(10_000)
  clock.advance(10_001)
  expect(await attempt(nodeB, 'sign-in:pair', key, false)).toBe('failed') // the 5th failure: blocked 20 s
  expect(await (nodeA('sign-in:pair', spec) as SharedFailureThrottle).sharedWaitMs(key)).toBe(20_000)
  clock.advance(20_001)
  expect(await attempt(nodeA, 'sign-in:pair', key, true)).toBe('ok')
  // Cleared in Redis: the other node lets the next wrong guess through as a first failure.
  expect(await (nodeB('sign-in:pair', spec) as SharedFailureThrottle).sharedWaitMs(key)).toBe(0)
  for (let i = 0; i < 4; i++) expect(await attempt(nodeB, 'sign-in:pair', key, false)).toBe('failed')
  expect(await attempt(nodeA, 'sign-in:pair', key, false)).toBe('blocked')
})

test('throttles and keys are apart: another name or another key is not blocked', async () => {
  const clock = new ManualClock(Date.parse('2026-11-25T02:00:00Z'))
  const node = sharedThrottles(link(), clock, 1, silent, cluster, clock)
  for (let i = 0; i < 4; i++) await attempt(node, 'reentry', 'admin-1', false)
  expect(await attempt(node, 'reentry', 'admin-1', true)).toBe('blocked')
  expect(await attempt(node, 'reentry', 'admin-2', true)).toBe('ok')
  expect(await attempt(node, 'sign-in:account', 'admin-1', true)).toBe('ok')
})

test('a key quiet for forgetAfterMs starts over on every node', async () => {
  const clock = new ManualClock(Date.parse('2026-11-25T03:00:00Z'))
  const nodeA = sharedThrottles(link(), clock, 1, silent, cluster, clock)
  const nodeB = sharedThrottles(link(), clock, 1, silent, cluster, clock)
  for (let i = 0; i < 3; i++) await attempt(nodeA, 'sign-in:source', '192.0.2.1', false)
  clock.advance(spec.forgetAfterMs + 1)
  // Three old failures are forgotten: four new ones are free again.
  for (let i = 0; i < 4; i++) expect(await attempt(nodeB, 'sign-in:source', '192.0.2.1', false)).toBe('failed')
  expect(await attempt(nodeA, 'sign-in:source', '192.0.2.1', false)).toBe('blocked')
})

test('Redis gone: sign-in is neither refused nor delayed for it; the node counts on its own', async () => {
  const clock = new ManualClock(Date.parse('2026-11-25T04:00:00Z'))
  // A port nothing listens on: every call fails fast.
  const dead = new RedisLink('redis://127.0.0.1:1')
  links.push(dead)
  const node = sharedThrottles(dead, clock, 1, silent, cluster, clock)
  const started = Date.now()
  expect(await attempt(node, 'sign-in:pair', 'carol\n192.0.2.2', true)).toBe('ok')
  expect(Date.now() - started).toBeLessThan(10_000)
  // One throttle object keeps its local counts (the routes make each throttle once).
  const throttle = node('sign-in:pair', spec)
  const outcomes: string[] = []
  for (let i = 0; i < 5; i++) outcomes.push(await attempt(() => throttle, 'x', 'carol\n192.0.2.2', false))
  expect(outcomes).toEqual(['failed', 'failed', 'failed', 'failed', 'blocked'])
})

test('another cluster sharing the Redis keeps its own counts (keys carry the database\'s cluster id)', async () => {
  const clock = new ManualClock(Date.parse('2026-11-25T05:00:00Z'))
  const ours = sharedThrottles(link(), clock, 1, silent, async () => 'aaaa', clock)
  const theirs = sharedThrottles(link(), clock, 1, silent, async () => 'bbbb', clock)
  for (let i = 0; i < 4; i++) await attempt(ours, 'sign-in:source', '192.0.2.50', false)
  expect(await attempt(ours, 'sign-in:source', '192.0.2.50', true)).toBe('blocked')
  expect(await attempt(theirs, 'sign-in:source', '192.0.2.50', true)).toBe('ok')
})

test('a burst of parallel guesses on one node gets no more password checks than the free failures', async () => {
  const clock = new ManualClock(Date.parse('2026-11-25T06:00:00Z'))
  const throttle = sharedThrottles(link(), clock, 1, silent, cluster, clock)('sign-in:pair', spec)
  let checks = 0
  const outcomes = await Promise.all(
    Array.from({ length: 12 }, () =>
      attempt(() => throttle, 'x', 'dave\n192.0.2.3', false).then((o) => {
        if (o === 'failed') checks++
        return o
      }),
    ),
  )
  expect(checks).toBe(spec.freeFailures)
  expect(outcomes.filter((o) => o === 'blocked').length).toBe(12 - spec.freeFailures)
})

test('a burst of parallel guesses spread over three nodes gets no more password checks than the free failures of ONE node', async () => {
  const clock = new ManualClock(Date.parse('2026-11-25T07:00:00Z'))
  // Three nodes (one throttle object each, as each node's routes make): every guess sent before the first failed.
  const nodes = [0, 1, 2].map(() => sharedThrottles(link(), clock, 1, silent, cluster, clock)('sign-in:pair', spec))
  let checks = 0
  const outcomes = await Promise.all(
    Array.from({ length: 24 }, (_, i) =>
      attempt(() => nodes[i % 3], 'x', 'erin\n192.0.2.4', false, async () => {
        checks++
        // A password check takes a while: every guess of the burst is under way before the first fails.
        await Bun.sleep(50)
      }),
    ),
  )
  // Each node counting only its own attempts under way let 4 through per node (12).
  expect(checks).toBe(spec.freeFailures)
  expect(outcomes.filter((o) => o === 'blocked').length).toBe(24 - spec.freeFailures)
})

test('an attempt under way on a node that died stops counting after PENDING_STALE_MS', async () => {
  const clock = new ManualClock(Date.parse('2026-11-25T08:00:00Z'))
  const key = 'frank\n192.0.2.5'
  const dying = sharedThrottles(link(), clock, 1, silent, cluster, clock)('sign-in:pair', spec) as SharedFailureThrottle
  // The node began 4 checks (the free failures) and was killed before any ended.
  for (let i = 0; i < spec.freeFailures; i++) expect((await dying.sharedBegin(key)).waitMs).toBe(0)
  const other = sharedThrottles(link(), clock, 1, silent, cluster, clock)
  expect(await attempt(other, 'sign-in:pair', key, true)).toBe('blocked')
  expect(await attempt(other, 'sign-in:pair', key, true)).toBe('blocked')
  clock.advance(PENDING_STALE_MS + 1)
  expect(await attempt(other, 'sign-in:pair', key, true)).toBe('ok')
  // Nothing left pending: 4 failures are free again once the key is cleared.
  for (let i = 0; i < spec.freeFailures; i++) expect(await attempt(other, 'sign-in:pair', key, false)).toBe('failed')
  expect(await attempt(other, 'sign-in:pair', key, false)).toBe('blocked')
})

test('an answer out of step with its command (another key\'s) is no verdict: the local counts stand in, the link reconnects', async () => {
  const { OutOfStepLink } = await import('./out-of-step-link')
  const clock = new ManualClock(Date.parse('2026-11-25T00:00:00Z'))
  const skewed = new OutOfStepLink(redis.url, 2_000, 50)
  links.push(skewed)
  const node = sharedThrottles(skewed, clock, 1, silent, cluster, clock)
  // Another command's bare number (a flood meter's count of keys pushed, say) handed to a fresh key's
  // 'begin': read as a wait in ms, it would refuse the sign-in.
  skewed.swap(3_600_000, /:ft:password:fresh@example\.com$/)
  expect(await attempt(node, 'password', 'fresh@example.com', true)).toBe('ok')
  // The link was dropped (down for its 50 ms pause), then answers again: failures are shared once more.
  await Bun.sleep(80)
  expect((await skewed.check()).ok).toBe(true)
  const other = sharedThrottles(link(), clock, 1, silent, cluster, clock)
  for (let i = 0; i < spec.freeFailures; i++) expect(await attempt(node, 'password', 'shared@example.com', false)).toBe('failed')
  expect(await attempt(other, 'password', 'shared@example.com', true)).toBe('blocked')
})

test('an account name with a lone surrogate (stored by Redis as U+FFFD) is still counted across nodes, not taken for an answer out of step', async () => {
  const clock = new ManualClock(Date.parse('2026-11-25T00:00:00Z'))
  const nodeA = sharedThrottles(link(), clock, 1, silent, cluster, clock)
  const nodeB = sharedThrottles(link(), clock, 1, silent, cluster, clock)
  const account = 'half\ud800@example.com'
  for (let i = 0; i < spec.freeFailures; i++) expect(await attempt(i % 2 ? nodeB : nodeA, 'password', account, false)).toBe('failed')
  expect(await attempt(nodeB, 'password', account, true)).toBe('blocked')
})
