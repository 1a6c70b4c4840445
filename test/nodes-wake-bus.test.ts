/**
 * src/nodes/wake-bus.ts against a real redis-server: what one node publishes wakes the others (never
 * itself), bursts are throttled without losing the last wake, event news (Orgs and their seqs) merges
 * into the throttled messages and stays bounded, a subscription lost with Redis comes back by itself, and
 * a flood of forged job and `events` wake-ups acts once per WOKEN_GAP_MS per word (src/nodes/heard-spacing.ts).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startRedis, type RedisServer } from './cluster-env'
import { RedisLink } from '../src/nodes/redis-link'
import { EVENT_NEWS_MAX_ORGS, WakeBus, type EventNews } from '../src/nodes/wake-bus'
import { HeardSpacing } from '../src/nodes/heard-spacing'
import { WOKEN_GAP_MS } from '../src/nodes/woken-reader'
import { Logger } from '../src/core/logger'
import { eventually } from './harness'

let redis: RedisServer
const buses: WakeBus[] = []
const links: RedisLink[] = []

beforeAll(async () => {
  redis = await startRedis()
})
afterAll(async () => {
  for (const b of buses) b.stop()
  for (const l of links) l.close()
  await redis?.stop()
})

/** A node's bus and what it heard, in order. */
async function node(id: string, throttleMs = 20) {
  const heard: string[] = []
  /** With each `events` heard: its news (undefined: a plain wake, look at the outbox). */
  const news: (EventNews | undefined)[] = []
  const probes = { count: 0 }
  const link = new RedisLink(redis.url)
  // The tests' probe ('ping', see `subscribed`) is counted apart from what the nodes publish.
  const onWake = (what: string, n?: EventNews) => {
    if (what === 'ping') return void probes.count++
    heard.push(what)
    if (what === 'events') news.push(n)
  }
  const bus = new WakeBus(redis.url, link, id, onWake, new Logger(process.env.DEBUG_WAKE ? 'info' : 'silent'), throttleMs, 200)
  links.push(link)
  buses.push(bus)
  bus.start()
  // Subscribed once a message from elsewhere gets through.
  return { bus, heard, news, link, probes }
}

async function subscribed(...nodes: { probes: { count: number } }[]) {
  const probe = new RedisLink(redis.url)
  links.push(probe)
  await eventually(async () => {
    await probe.send('PUBLISH', ['fixloop:wake', 'probe ping'])
    return nodes.every((n) => n.probes.count > 0) ? true : undefined
  }, 5_000)
  for (const n of nodes) n.probes.count = 0
}

test('a wake published by one node reaches the others, not itself; the message names what happened', async () => {
  const [a, b, c] = [await node('node_a'), await node('node_b'), await node('node_c')]
  await subscribed(a, b, c)
  const heardBefore = b.bus.counts.heard
  a.bus.publish('events')
  a.bus.publish('process')
  await eventually(() => (b.heard.length >= 2 && c.heard.length >= 2 ? true : undefined), 5_000)
  await Bun.sleep(100)
  expect(b.heard.sort()).toEqual(['events', 'process'])
  expect(c.heard.sort()).toEqual(['events', 'process'])
  expect(a.heard).toEqual([])
  expect(a.bus.counts.published).toBe(2)
  expect(b.bus.counts.heard - heardBefore).toBe(2 + b.probes.count)
})

test('a burst is throttled per kind: the first goes at once, the rest become one trailing wake', async () => {
  const [a, b] = [await node('node_d', 200), await node('node_e')]
  await subscribed(a, b)
  for (let i = 0; i < 50; i++) a.bus.publish('events')
  await eventually(() => (b.heard.length >= 2 ? true : undefined), 5_000)
  await Bun.sleep(400)
  expect(b.heard).toEqual(['events', 'events'])
  expect(a.bus.counts.published).toBe(2)
})

test('event news: a burst merges into the throttled messages (each Org its highest seq); too many Orgs or junk make a plain wake', async () => {
  const [a, b] = [await node('node_h', 200), await node('node_i')]
  await subscribed(a, b)
  a.bus.publishEvents(new Map([['o1', 1]]))
  for (let i = 2; i <= 30; i++) a.bus.publishEvents(new Map([[i % 2 ? 'o1' : 'o2', i]]))
  a.bus.publishEvents(new Map([['o3', 7], ['o1', 5]]))
  await eventually(() => (b.news.length >= 2 ? true : undefined), 5_000)
  await Bun.sleep(400)
  expect(b.news).toEqual([new Map([['o1', 1]]), new Map([['o1', 29], ['o2', 30], ['o3', 7]])])
  expect(a.bus.counts.published).toBe(2)

  // More Orgs than one message names: a plain `events` (the readers look), and the next window starts afresh.
  b.news.length = 0
  a.bus.publishEvents(new Map(Array.from({ length: EVENT_NEWS_MAX_ORGS + 1 }, (_, i) => [`org${i}`, 1])))
  await eventually(() => (b.news.length >= 1 ? true : undefined), 5_000)
  await Bun.sleep(250)
  a.bus.publishEvents(new Map([['o9', 3]]))
  // A commit that did not name its Orgs: its window's message names none.
  await eventually(() => (b.news.length >= 2 ? true : undefined), 5_000)
  await Bun.sleep(250)
  a.bus.publishEvents(new Map([['o5', 1]]))
  a.bus.publishEvents(new Map([['o4', 2]]))
  a.bus.publishEvents(null)
  await eventually(() => (b.news.length >= 4 ? true : undefined), 5_000)
  expect(b.news).toEqual([undefined, new Map([['o9', 3]]), new Map([['o5', 1]]), undefined])

  // Junk after `events` from some other writer: a plain wake, never a throw.
  b.news.length = 0
  const other = new RedisLink(redis.url)
  links.push(other)
  for (const junk of ['{', '[1]', '{"o1":-1}', '{"o1":"2"}', '{}', 'null', '{"o1":1.5}']) await other.send('PUBLISH', ['fixloop:wake', `node_x events ${junk}`])
  await eventually(() => (b.news.length >= 7 ? true : undefined), 5_000)
  expect(b.news).toEqual(Array(7).fill(undefined))
})

test('Redis restarted: the subscription comes back by itself and wakes flow again', async () => {
  const [a, b] = [await node('node_f'), await node('node_g')]
  await subscribed(a, b)
  await redis.halt()
  // Published while Redis is away: lost (pub/sub is at-most-once; the readers' safety poll covers it), no throw.
  a.bus.publish('events')
  await redis.restart()
  await subscribed(b)
  // a's own link fails fast for a second after the outage (redis-link.ts): a wake then is lost too, so
  // the next ones carry the news, as a busy node's would.
  await eventually(() => {
    a.bus.publish('agent')
    return b.heard.includes('agent') ? true : undefined
  }, 5_000)
  expect(b.heard.every((w) => w === 'agent')).toBe(true)
})

test('only the nodes of this cluster are listened to: a wake or event news from any other sender on the channel does nothing', async () => {
  // Another cluster on the same Redis (a staging copy of this database: the same Orgs) publishes on the
  // same channel; so can anyone who reaches the Redis. `fromPeer` says who is alive in this database.
  const peers = new Set(['node_p'])
  const heard: string[] = []
  const news: (EventNews | undefined)[] = []
  // The probe that tells the subscription is up ('ping', sent until one arrives) is counted apart.
  let pings = 0
  const link = new RedisLink(redis.url)
  links.push(link)
  const bus = new WakeBus(redis.url, link, 'node_me', (what, n) => {
    if (what === 'ping') return void pings++
    heard.push(what)
    if (what === 'events') news.push(n)
  }, new Logger('silent'), 20, 200, (id) => peers.has(id))
  buses.push(bus)
  bus.start()
  const other = new RedisLink(redis.url)
  links.push(other)
  // Subscribed once the peer's message gets through.
  await eventually(async () => {
    await other.send('PUBLISH', ['fixloop:wake', 'node_p ping'])
    return pings > 0 ? true : undefined
  }, 5_000)
  await Bun.sleep(100)
  const before = bus.counts.heard
  for (const message of ['node_staging process', 'node_staging events {"org1":999999}', 'node_staging events', 'node_forged agent']) await other.send('PUBLISH', ['fixloop:wake', message])
  await other.send('PUBLISH', ['fixloop:wake', 'node_p events {"org1":3}'])
  await eventually(() => (heard.length >= 1 ? true : undefined), 5_000)
  await Bun.sleep(200)
  expect(heard).toEqual(['events'])
  expect(news).toEqual([new Map([['org1', 3]])])
  expect(bus.counts.heard - before).toBe(1)
  expect(bus.heardAt('node_staging')).toBeUndefined()
  expect(bus.heardAt('node_p')).toBeDefined()
  // A node alive in the database from the next beat on is heard.
  peers.add('node_new')
  await other.send('PUBLISH', ['fixloop:wake', 'node_new process'])
  await eventually(() => (heard.includes('process') ? true : undefined), 5_000)
})

test('a flood of forged job and events wake-ups acts once per WOKEN_GAP_MS per word, news kept; a single wake-up after quiet acts at once', async () => {
  // Anyone who can publish on the channel can pose as a live node (its id is in every message). Each
  // `process` woke the workers (a read of the jobs table), each plain `events` the hub (a read of the
  // outbox's counters): 250,000 forged in 2 s read the jobs table ~1.5 times as often as a quiet node,
  // 330,000 `events` ~70 counter reads a second.
  const acts: { what: string; news?: EventNews; at: number }[] = []
  const spacing = new HeardSpacing((what, news) => void acts.push({ what, news, at: performance.now() }))
  let pings = 0
  const link = new RedisLink(redis.url)
  const forger = new RedisLink(redis.url)
  links.push(link, forger)
  const bus = new WakeBus(redis.url, link, 'node_spaced', (what, n) => (what === 'ping' ? void pings++ : spacing.heard(what, n)), new Logger('silent'), 20, 200)
  buses.push(bus)
  bus.start()
  await eventually(async () => {
    await forger.send('PUBLISH', ['fixloop:wake', 'node_peer ping'])
    return pings > 0 ? true : undefined
  }, 5_000)
  await Bun.sleep(2 * WOKEN_GAP_MS)

  // One genuine wake-up after quiet: acted on as soon as it is heard (generous bound: a loaded CI machine).
  const sentAt = performance.now()
  await forger.send('PUBLISH', ['fixloop:wake', 'node_peer process'])
  await eventually(() => (acts.length > 0 ? true : undefined), 5_000)
  expect(acts.map((a) => a.what)).toEqual(['process'])
  expect(acts[0].at - sentAt).toBeLessThan(1_000)

  // The flood: `process` and `events` naming Orgs, back to back.
  await Bun.sleep(2 * WOKEN_GAP_MS)
  acts.length = 0
  const heardBefore = bus.counts.heard
  const highest = new Map<string, number>()
  let seq = 0
  const FLOOD_MS = 1_500
  const until = performance.now() + FLOOD_MS
  while (performance.now() < until) {
    const sends: Promise<unknown>[] = []
    for (let i = 0; i < 400; i++) {
      if (i % 2) sends.push(forger.send('PUBLISH', ['fixloop:wake', 'node_peer process']))
      else {
        const org = `org${i % 7}`
        highest.set(org, ++seq)
        sends.push(forger.send('PUBLISH', ['fixloop:wake', `node_peer events {"${org}":${seq}}`]))
      }
    }
    await Promise.all(sends)
  }
  const floodEnded = performance.now()
  await Bun.sleep(4 * WOKEN_GAP_MS)
  const heard = bus.counts.heard - heardBefore
  const of = (what: string) => acts.filter((a) => a.what === what)
  const most = Math.ceil((floodEnded - (until - FLOOD_MS)) / WOKEN_GAP_MS) + 3
  console.log(`heard-spacing: ${heard} wake-ups heard in ${Math.round(floodEnded - until + FLOOD_MS)} ms, ${of('process').length} process and ${of('events').length} events acts (at most ${most} each)`)
  // Before: an act per message heard.
  expect(heard).toBeGreaterThan(10 * most)
  expect(of('process').length).toBeLessThanOrEqual(most)
  expect(of('events').length).toBeLessThanOrEqual(most)
  // Acts keep the gap between them, and the last wake-up of the flood is acted on.
  for (const kind of ['process', 'events']) {
    const at = of(kind).map((a) => a.at)
    for (let i = 1; i < at.length; i++) expect(at[i] - at[i - 1]).toBeGreaterThanOrEqual(WOKEN_GAP_MS - 2)
    expect(at.length).toBeGreaterThan(1)
  }
  // Each Org's highest seq reached the hub: the news of the wake-ups folded into an act is merged, not lost.
  const told = new Map<string, number>()
  for (const a of of('events')) for (const [org, s] of a.news ?? []) told.set(org, Math.max(told.get(org) ?? 0, s))
  expect(told).toEqual(highest)
  spacing.stop()
}, 30_000)
