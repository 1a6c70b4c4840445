/**
 * The spam signals `repeated_text` and `link_flood` (repeat-tracker.ts) over every node of a cluster: the
 * distinct addresses that sent a text's template, or linked to a site, within REPEAT_WINDOW_MS on any node.
 * Each node counting alone let a bot spreading one text's addresses over N nodes send N times as many
 * before the signal fired (3 addresses per node, never 4 on one).
 *
 * As the proof-of-work meters (shared-flood-meter.ts), Redis is never on the intake's way: a report is
 * scored from memory at once, with the larger of this node's count and the cluster's as last read. Every
 * second a timer adds the addresses this node saw since to Redis (a sorted set per key,
 * `fixloop:rt:<App id>:t:<template digest>` or `…:l:<site>`, holding a digest of each address, at most one
 * more member than the signal needs, expiring REPEAT_WINDOW_MS after its first member as a node's own
 * window does) and reads back the member counts of the keys this node used lately. So the cluster's count
 * is a second or two stale; a Redis away or refusing leaves each node counting alone (a warning a
 * minute), never costs a report's time; a key another writer gave another type is skipped.
 *
 * Bounded: at most `maxKeys` keys watched and as many (key, address) pairs pending; nothing is listed or
 * scanned. Only ZADD, ZCARD and PEXPIRE inside scripts: commands an ACL user of fixloop has already.
 */
import type { Clock } from '../core/clock'
import type { Logger } from '../core/logger'
import type { RedisLink } from '../nodes/redis-link'
import { RepeatTracker } from './repeat-tracker'
import { BackgroundTick, RecentKeys } from './shared-counts'
import { REPEAT_WINDOW_MS } from './spam-score'

const CHUNK = 500

// KEYS: the sets; ARGV: per key its address digest and how many members are enough, then the time (score)
// and the window (PX of a new set).
const PUSH_SCRIPT = `
local n = #KEYS
local now = ARGV[2 * n + 1]
local ttl = ARGV[2 * n + 2]
for i, key in ipairs(KEYS) do
  local size = redis.pcall('ZCARD', key)
  if type(size) == 'number' then
    if size <= tonumber(ARGV[2 * i]) then redis.call('ZADD', key, 'NX', now, ARGV[2 * i - 1]) end
    if size == 0 then redis.call('PEXPIRE', key, ttl) end
  end
end
return n
`
const PUSH_SHA = new Bun.CryptoHasher('sha1').update(PUSH_SCRIPT).digest('hex')
// KEYS: the sets; answers their sizes in order (0: none, or not a set).
const READ_SCRIPT = `
local out = {}
for i, key in ipairs(KEYS) do
  local size = redis.pcall('ZCARD', key)
  out[i] = type(size) == 'number' and size or 0
end
return out
`
const READ_SHA = new Bun.CryptoHasher('sha1').update(READ_SCRIPT).digest('hex')

export class SharedRepeatTracker extends RepeatTracker {
  /** (key, address digest) pairs seen here and not yet pushed → how many addresses are enough for the key. */
  private pending = new Map<string, { key: string; member: string; enough: number }>()
  /**
   * The cluster's distinct addresses per key as last read, and when. A count read REPEAT_WINDOW_MS ago or
   * more is not used: every set it counted has expired since. Without that, a count read before Redis went
   * away stayed for the whole outage while its key was in use, and a template or site that had reached the
   * signal kept firing it on every report naming it, long after its window.
   */
  private readonly shared = new Map<string, { size: number; readAt: number }>()
  /** Keys used lately: the ones read back. */
  private readonly watched: RecentKeys
  private readonly ticker: BackgroundTick

  constructor(
    private readonly link: RedisLink,
    private readonly time: Clock,
    log?: Logger,
    private readonly maxKeys = 10_000,
    refreshMs = 1_000,
  ) {
    super(time)
    this.watched = new RecentKeys(maxKeys, (key) => this.shared.delete(key))
    this.ticker = new BackgroundTick(
      async () => {
        await this.push()
        await this.readBack()
      },
      refreshMs,
      time,
      log,
      'repeated_text and link_flood',
    )
  }

  protected override counted(key: string, address: string, enough: number, own: number): number {
    // A fast 64-bit hash, not SHA-256 (twice per report on intake's way): the address stays out of Redis,
    // and two addresses colliding only count as one.
    const member = Bun.hash(address).toString(36)
    const id = `${key}\n${member}`
    if (this.pending.has(id) || this.pending.size < this.maxKeys) this.pending.set(id, { key, member, enough })
    this.watched.use(key, this.time.now())
    this.ticker.ensure()
    const read = this.shared.get(key)
    return read && this.time.now() - read.readAt < REPEAT_WINDOW_MS ? Math.max(own, read.size) : own
  }

  /** Stops the timer (tests; a server's ends with its process). */
  stop(): void {
    this.ticker.stop()
  }

  private async push(): Promise<void> {
    if (this.pending.size === 0) return
    // Taken now; lost if Redis cannot take them (the cluster's count falls short, never this node's own).
    const batch = [...this.pending.values()]
    this.pending = new Map()
    for (let i = 0; i < batch.length; i += CHUNK) {
      const part = batch.slice(i, i + CHUNK)
      const args = [String(part.length), ...part.map((p) => `fixloop:rt:${p.key}`), ...part.flatMap((p) => [p.member, String(p.enough)]), String(this.time.now()), String(REPEAT_WINDOW_MS)]
      await this.link.evalScript(PUSH_SCRIPT, PUSH_SHA, args)
    }
  }

  private async readBack(): Promise<void> {
    const readAt = this.time.now()
    this.watched.forgetIdle(readAt, REPEAT_WINDOW_MS)
    const keys = this.watched.keys()
    for (let i = 0; i < keys.length; i += CHUNK) {
      const part = keys.slice(i, i + CHUNK)
      const sizes = await this.link.evalScript(READ_SCRIPT, READ_SHA, [String(part.length), ...part.map((k) => `fixloop:rt:${k}`)])
      // One size per key asked: anything else is another command's reply (RedisLink.desynchronized).
      if (!Array.isArray(sizes) || sizes.length !== part.length) throw this.link.desynchronized('repeat tracker read')
      part.forEach((k, j) => {
        if (this.watched.has(k)) this.shared.set(k, { size: Number(sizes[j]) || 0, readAt })
      })
    }
  }
}
