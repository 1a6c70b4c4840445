/**
 * src/abuse/shared-flood-meter.ts and shared-repeat-tracker.ts on their own: two of each (two nodes) on a redis-server of this file's own,
 * a clock moved by hand (the background tick runs on real time, every 20 ms here).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { RedisClient } from 'bun'
import { ManualClock } from '../src/core/clock'
import { RedisLink } from '../src/nodes/redis-link'
import { SharedFloodMeter } from '../src/abuse/shared-flood-meter'
import { REPORT_BUDGET_WINDOW_MS } from '../src/abuse/difficulty'
import { SharedRepeatTracker } from '../src/abuse/shared-repeat-tracker'
import { REPEAT_WINDOW_MS } from '../src/abuse/spam-score'
import { startRedis, type RedisServer } from './cluster-env'
import { eventually } from './harness'

let redis: RedisServer
const links: RedisLink[] = []
const meters: SharedFloodMeter[] = []
const trackers: SharedRepeatTracker[] = []

beforeAll(async () => {
  redis = await startRedis()
}, 30_000)

afterAll(async () => {
  for (const m of meters) m.stop()
  for (const t of trackers) t.stop()
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

/** How many GETs redis-server has run (its scripts' included). */
async function getsRun(client: RedisClient): Promise<number> {
  const info = String(await client.send('INFO', ['commandstats']))
  return Number(/cmdstat_get:calls=(\d+)/.exec(info)?.[1] ?? 0)
}

test("the report budget's keys idle at a node are read back now and then, not every second (Redis's load)", async () => {
  // Kept for two hours (the fix above), a busy node's 10,000 budget keys would otherwise cost Redis 20,000
  // GETs a second per node, most of them for addresses gone quiet there.
  const window = REPORT_BUDGET_WINDOW_MS
  const clock = new ManualClock(Math.floor(Date.UTC(2026, 5, 2) / window) * window + 60_000)
  const b = node(clock, 'budget-cost', window)
  for (let i = 0; i < 1_000; i++) b.hit(`app1|192.0.2.${i}`)
  clock.advance(6 * 60_000)
  await settle()
  const client = new RedisClient(redis.url)
  try {
    const before = await getsRun(client)
    await Bun.sleep(500) // ~25 ticks
    // Before: 2 GETs per key and tick (~50,000); now they wait for their every-30-seconds read (the clock stands still).
    expect((await getsRun(client)) - before).toBeLessThan(2_000)
  } finally {
    client.close()
  }
})

describe('the shared repeat counts', () => {
  test("Redis away: a text's cluster count as last read does not outlive its window (the node counts alone, as documented)", async () => {
    // Before: the counts as last read stayed while Redis was away (nothing read them again and nothing
    // aged them), so a template or a site that had reached the signal's count kept firing repeated_text or
    // link_flood on every report naming it, however long the outage, long after the 10-minute window.
    const clock = new ManualClock(Date.UTC(2026, 5, 1))
    const aLink = new RedisLink(redis.url)
    const bLink = new RedisLink(redis.url)
    links.push(aLink, bLink)
    const a = new SharedRepeatTracker(aLink, clock, undefined, 10_000, 20)
    const b = new SharedRepeatTracker(bLink, clock, undefined, 10_000, 20)
    trackers.push(a, b)
    const text = 'Claim your free crypto bonus now at our partner site, limited offer'
    a.note('app-rt', '198.51.100.1', text)
    a.note('app-rt', '198.51.100.2', text)
    b.note('app-rt', '198.51.100.3', text)
    b.note('app-rt', '198.51.100.4', text)
    await eventually(() => a.note('app-rt', '198.51.100.1', text) >= 4)
    // Redis away for this node from now on; the bot's text keeps coming (the key never idle), from an address it had used.
    aLink.close()
    for (const step of [5, 5]) {
      clock.advance(step * 60_000)
      await settle()
      a.note('app-rt', '198.51.100.1', text)
    }
    clock.advance(60_000)
    await settle()
    // 11 minutes on, every set that count was read from has expired: this node's own count (one address).
    expect(a.note('app-rt', '198.51.100.5', text)).toBe(1)
  })
})
