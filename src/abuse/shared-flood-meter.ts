/**
 * A flood meter (flood-meter.ts) that counts the events of every node of a cluster: the proof-of-work
 * difficulty meters, the report budget and the spam signal `address_flood`. Each node counting alone let a
 * client spreading its reports over N nodes send N times as many at the App's own difficulty.
 *
 * Redis never sits on the intake's hot path: `hit` and `rate` answer from memory at once, as on one node.
 * A timer (every `refreshMs`, one second) pushes the hits counted here since the last push into Redis
 * (one counter per key and window, `fixloop:fm:<meter>:<window start>:<key>`, expiring two windows and a
 * minute after its last push) and reads back the cluster's counts of the keys this node hit or read
 * lately (the current and the previous window), each one script (EVALSHA) per 500 keys. A key's rate is the larger of this node's own
 * count (exact, at once) and the cluster's as last read plus this node's hits since: so the cluster's
 * figure is at most a second or two stale, and a Redis away or refusing costs nothing but that figure
 * going stale (each node then counts alone, as before), never a request's time or a 5xx.
 *
 * Bounded: at most `maxKeys` keys watched (read back), the least recently used dropped first, and as many
 * pending; a key unused for WATCH_MS, or for two of its windows when they are longer, is no longer read back
 * (and one unused here for WATCH_MS is read every IDLE_READ_MS only). The counters in Redis expire by themselves;
 * nothing is ever listed or scanned. Windows are the node's clock's, which a cluster sets to the
 * database's (OffsetClock), so the nodes agree on them.
 */
import type { Clock } from '../core/clock'
import type { Logger } from '../core/logger'
import type { RedisLink } from '../nodes/redis-link'
import { FloodMeter, type Meter } from './flood-meter'
import { BackgroundTick, RecentKeys } from './shared-counts'

/**
 * A key not hit nor read for this long (or for two of the meter's windows, when longer) is no longer read
 * back (its next read is this node's count until then). Two windows: while its counts can still count (the
 * current window and the previous one); the report budget's window is an hour, and dropping its keys after
 * 5 minutes let an address visiting each of N nodes once every 5 minutes be judged by one node's count.
 */
const WATCH_MS = 5 * 60_000
/**
 * A key used here within WATCH_MS is read back every tick; one idle here for longer (kept for a long
 * window: the report budget's) only this often. Its count changes only by other nodes' hits, and reading
 * a busy node's 10,000 budget keys every second would cost Redis 20,000 GETs a second per node.
 */
const IDLE_READ_MS = 30_000
/** Keys per Redis command: a tick's work comes in pieces that keep any one command short. */
const CHUNK = 500

// Only GET and SET, which an ACL user of fixloop has already (docs/operations.md "Cluster": the least ACL).
// pcall: a counter another writer gave another type (WRONGTYPE) is skipped, not the rest of the batch.
// KEYS: the counters to add to; ARGV: their increments, then their lifetime (PX, from this push).
const PUSH_SCRIPT = `
local ttl = ARGV[#KEYS + 1]
for i, key in ipairs(KEYS) do
  local v = redis.pcall('GET', key)
  if type(v) ~= 'table' then
    redis.call('SET', key, tostring((tonumber(v) or 0) + tonumber(ARGV[i])), 'PX', ttl)
  end
end
return #KEYS
`
const PUSH_SHA = new Bun.CryptoHasher('sha1').update(PUSH_SCRIPT).digest('hex')
// KEYS: the counters to read; answers their counts in order (0: none, or not a counter).
const READ_SCRIPT = `
local out = {}
for i, key in ipairs(KEYS) do
  local v = redis.pcall('GET', key)
  out[i] = type(v) == 'string' and (tonumber(v) or 0) or 0
end
return out
`
const READ_SHA = new Bun.CryptoHasher('sha1').update(READ_SCRIPT).digest('hex')

/** The cluster's counts of a key as last read: its window's start, that window's and the one before. */
interface SharedCount {
  start: number
  current: number
  previous: number
}

export interface SharedMeterOptions {
  link: RedisLink
  clock: Clock
  /** Names the meter in its Redis keys (`pow`, `budget`). */
  name: string
  windowMs?: number
  maxKeys?: number
  refreshMs?: number
  log?: Logger
}

export class SharedFloodMeter implements Meter {
  private readonly local: FloodMeter
  private readonly windowMs: number
  private readonly maxKeys: number
  /** How long an unused key is still read back (WATCH_MS). */
  private readonly watchMs: number
  /** When every watched key was last read back (the idle ones too: IDLE_READ_MS). */
  private idleReadAt = -Infinity
  /** Hits counted here and not yet pushed: `<window start>|<key>` → how many. */
  private pending = new Map<string, number>()
  /** The cluster's counts as last read (this node's pushed hits included). */
  private readonly shared = new Map<string, SharedCount>()
  /** Keys hit or read lately: the ones read back. */
  private readonly watched: RecentKeys
  private readonly ticker: BackgroundTick

  constructor(private readonly o: SharedMeterOptions) {
    this.windowMs = o.windowMs ?? 60_000
    this.maxKeys = o.maxKeys ?? 10_000
    this.watchMs = Math.max(WATCH_MS, 2 * this.windowMs)
    this.local = new FloodMeter(o.clock, 50_000, this.windowMs)
    this.watched = new RecentKeys(this.maxKeys, (key) => this.shared.delete(key))
    this.ticker = new BackgroundTick(
      async () => {
        await this.push()
        await this.readBack()
      },
      o.refreshMs ?? 1_000,
      o.clock,
      o.log,
      `the proof-of-work meters (${o.name})`,
    )
  }

  hit(key: string): number {
    const own = this.local.hit(key)
    const pendingKey = `${this.windowStart(this.o.clock.now())}|${key}`
    const n = this.pending.get(pendingKey)
    // Full: the hit still counts here (own), only the cluster does not hear of it.
    if (n !== undefined || this.pending.size < this.maxKeys) this.pending.set(pendingKey, (n ?? 0) + 1)
    this.watch(key)
    return Math.max(own, this.sharedRate(key))
  }

  rate(key: string): number {
    this.watch(key)
    return Math.max(this.local.rate(key), this.sharedRate(key))
  }

  /** Stops the timer (tests; a server's ends with its process). */
  stop(): void {
    this.ticker.stop()
  }

  private windowStart(now: number): number {
    return Math.floor(now / this.windowMs) * this.windowMs
  }

  private counterKey(start: number, key: string): string {
    return `fixloop:fm:${this.o.name}:${start}:${key}`
  }

  /** The cluster's rate of `key` as last read, rolled to now, with this node's hits not yet pushed. */
  private sharedRate(key: string): number {
    const c = this.shared.get(key)
    if (!c) return 0
    const now = this.o.clock.now()
    const start = this.windowStart(now)
    let current = c.start === start ? c.current : 0
    let previous = c.start === start ? c.previous : c.start === start - this.windowMs ? c.current : 0
    current += this.pending.get(`${start}|${key}`) ?? 0
    previous += this.pending.get(`${start - this.windowMs}|${key}`) ?? 0
    return current + previous * Math.max(0, 1 - (now - start) / this.windowMs)
  }

  private watch(key: string): void {
    this.watched.use(key, this.o.clock.now())
    this.ticker.ensure()
  }

  private async push(): Promise<void> {
    if (this.pending.size === 0) return
    // Taken now: hits during the round trip go to the next push. Lost if Redis cannot take them (an outage
    // undercounts the cluster's figure, never this node's own count).
    const batch = [...this.pending]
    this.pending = new Map()
    const ttl = String(2 * this.windowMs + 60_000)
    for (let i = 0; i < batch.length; i += CHUNK) {
      const part = batch.slice(i, i + CHUNK)
      const keys = part.map(([k]) => {
        const bar = k.indexOf('|')
        return this.counterKey(Number(k.slice(0, bar)), k.slice(bar + 1))
      })
      const pushed = await this.o.link.evalScript(PUSH_SCRIPT, PUSH_SHA, [String(keys.length), ...keys, ...part.map(([, n]) => String(n)), ttl])
      // The answer is the count of keys pushed: anything else is another command's reply.
      if (pushed !== keys.length) throw this.o.link.desynchronized('flood meter push')
    }
  }

  private async readBack(): Promise<void> {
    const now = this.o.clock.now()
    const start = this.windowStart(now)
    this.watched.forgetIdle(now, this.watchMs)
    const all = now - this.idleReadAt >= IDLE_READ_MS
    if (all) this.idleReadAt = now
    const keys = all ? this.watched.keys() : this.watched.usedSince(now - WATCH_MS)
    for (let i = 0; i < keys.length; i += CHUNK) {
      const part = keys.slice(i, i + CHUNK)
      const names = part.flatMap((k) => [this.counterKey(start, k), this.counterKey(start - this.windowMs, k)])
      const counts = await this.o.link.evalScript(READ_SCRIPT, READ_SHA, [String(names.length), ...names])
      if (!Array.isArray(counts) || counts.length !== names.length) throw this.o.link.desynchronized('flood meter read')
      part.forEach((k, j) => {
        if (!this.watched.has(k)) return
        this.shared.set(k, { start, current: Number(counts[2 * j] ?? 0) || 0, previous: Number(counts[2 * j + 1] ?? 0) || 0 })
      })
    }
  }
}
