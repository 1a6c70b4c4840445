/**
 * src/abuse/shared-flood-meter.ts on its own: two meters (two nodes) on a redis-server of this file's own,
 * a clock moved by hand (the background tick runs on real time, every 20 ms here).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ManualClock } from '../src/core/clock'
import { RedisLink } from '../src/nodes/redis-link'
import { SharedFloodMeter } from '../src/abuse/shared-flood-meter'
import { REPORT_BUDGET_WINDOW_MS } from '../src/abuse/difficulty'
import { startRedis, type RedisServer } from './cluster-env'
import { eventually } from './harness'

let redis: RedisServer
const links: RedisLink[] = []
const meters: SharedFloodMeter[] = []

beforeAll(async () => {
  redis = await startRedis()
}, 30_000)

afterAll(async () => {
  for (const m of meters) m.stop()
  for (const l of links) l.close()
  await redis?.stop()
})

function node(clock: ManualClock, name: string, windowMs: number): SharedFloodMeter {
  const link = new RedisLink(redis.url)
  links.push(link)
  const meter = new SharedFloodMeter({ link, clock, name, windowMs, refreshMs: 20 })
  meters.push(meter)
  return meter
}

const settle = () => Bun.sleep(200)

describe('the shared flood meter', () => {
  test("the report budget (a 1-hour window): a key idle at one node for 6 minutes still has the cluster's count there", async () => {
    // Before: a key unused for 5 minutes was no longer read back and its cluster count was forgotten, so an
    // address visiting each of N nodes once every 5 minutes or more was judged by one node's count alone:
    // N times the report budget (10 an hour at the App's own difficulty).
    const window = REPORT_BUDGET_WINDOW_MS
    const clock = new ManualClock(Math.floor(Date.UTC(2026, 5, 1) / window) * window + 60_000)
    const a = node(clock, 'budget-idle', window)
    const b = node(clock, 'budget-idle', window)
    const key = 'app1|203.0.113.9'
    b.hit(key)
    for (let i = 0; i < 10; i++) a.hit(key)
    await eventually(() => b.rate(key) >= 11)
    clock.advance(6 * 60_000)
    await settle()
    // The cluster's 11 reports, 6 minutes into the same hour: still counted at b.
    expect(b.rate(key)).toBeGreaterThanOrEqual(10.9)
  })
})
