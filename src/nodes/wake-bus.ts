/**
 * Wake-ups across nodes (cluster mode) through Valkey/Redis pub/sub. A node that commits events or queues
 * jobs publishes one short message on one channel: `<node id> <what>`, where `what` is a job kind, or
 * `events` followed by the news: a JSON object of the Orgs that got events and each one's last seq
 * (`<node id> events {"<org id>":<seq>,…}`), or nothing when there were more than EVENT_NEWS_MAX_ORGS
 * Orgs or some commit did not say which. Every other node hears it and acts at once: its event hub tells
 * the named Orgs' streams and the dispatchers without a query (a plain `events`: it reads the outbox's
 * counters), its workers claim. The message carries no events: the database stays the only source, and
 * readers catch up from their own cursors. Pub/sub is at-most-once (a node that is reconnecting misses
 * messages), so every reader keeps a safety poll; a lost message costs at most that poll's delay.
 *
 * Publishing is throttled per `what` (one message per `throttleMs`, the last one never dropped): under an
 * intake burst a commit happens every few milliseconds, and one wake per window is all the readers need;
 * the event news of a window is merged into its one message.
 * Not LISTEN/NOTIFY: NOTIFY takes a lock that serializes every committing transaction (DESIGN.md).
 *
 * Only the nodes of this database are listened to (`fromPeer`: alive in it at this node's last beat). The
 * channel is one per Redis server, whatever its database number or key prefix: another fixloop cluster on
 * the same Redis (a staging copy of production's database, which has the same Orgs) publishes on it too,
 * and its `events` news would move this node's outbox mark by its own seqs (src/modules/events/hub.ts
 * `heard`), its job wakes would send this node's workers claiming. A node that just started is heard from
 * the next beat on (its wakes meanwhile are covered by the safety poll).
 */
import { RedisClient } from 'bun'
import type { Logger } from '../core/logger'
import type { RedisLink } from './redis-link'
import { WAKE_CHANNEL } from '../db/redis-check'

export { WAKE_CHANNEL }
/** What a node publishes at each heartbeat: "I am here, on this Redis" (src/nodes/peer-check.ts). */
export const ANNOUNCE = 'hello'
/** How often a cluster node's event hub reads the outbox when nothing woke it (DESIGN.md: a 1 s safety poll). */
export const CLUSTER_SAFETY_POLL_MS = 1_000
/** Orgs one `events` message names at most (~40 bytes each); past that it names none: the readers look. */
export const EVENT_NEWS_MAX_ORGS = 100

/** Orgs that got events, each with its last seq after them. */
export type EventNews = ReadonlyMap<string, number>

export class WakeBus {
  private subscriber: RedisClient | undefined
  private stopped = false
  /** The subscription failed and has not come back yet (logged once per outage). */
  private down = false
  private reconnect: ReturnType<typeof setTimeout> | undefined
  /** Per `what`: when the last message went out, and whether one is scheduled. */
  private readonly sent = new Map<string, number>()
  private readonly scheduled = new Set<string>()
  /** The event news the next `events` message carries (null: too many Orgs, or some unknown: none). */
  private news: Map<string, number> | null = new Map()
  /** Messages published and heard (from other nodes), for /metrics and tests. */
  readonly counts = { published: 0, heard: 0 }
  /** When each other node was last heard (performance.now()): peer-check.ts compares it with the database. */
  private readonly lastHeard = new Map<string, number>()

  constructor(
    private readonly url: string,
    private readonly link: RedisLink,
    private readonly nodeId: string,
    /** `news`: with `events`, the Orgs it names (absent: the reader looks at the outbox itself). */
    private readonly onWake: (what: string, news?: EventNews) => void,
    private readonly log: Logger,
    private readonly throttleMs = 20,
    private readonly retryMs = 1_000,
    /** Whether a sender is a node of this cluster (alive in its database); every sender when absent (tests). */
    private readonly fromPeer: (nodeId: string) => boolean = () => true,
  ) {}

  /** Subscribes (and keeps subscribing after a lost connection, every `retryMs`). */
  start(): void {
    this.stopped = false
    void this.subscribe()
  }

  stop(): void {
    this.stopped = true
    clearTimeout(this.reconnect)
    this.subscriber?.close()
    this.subscriber = undefined
  }

  /** Tells the other nodes that `what` happened here (events committed, or a job of that kind queued). */
  publish(what: string): void {
    if (this.stopped || this.scheduled.has(what)) return
    const wait = (this.sent.get(what) ?? -Infinity) + this.throttleMs - performance.now()
    if (wait <= 0) return this.send(what)
    this.scheduled.add(what)
    setTimeout(() => {
      this.scheduled.delete(what)
      this.send(what)
    }, wait)
  }

  /**
   * Tells the other nodes that events committed here, for these Orgs (null: Orgs unknown). Throttled with
   * the other `events` wakes: a window's news is merged into its one message.
   */
  publishEvents(news: EventNews | null): void {
    if (this.stopped) return
    if (news === null || this.news === null) this.news = null
    else {
      for (const [org, seq] of news) if (seq > (this.news.get(org) ?? 0)) this.news.set(org, seq)
      if (this.news.size > EVENT_NEWS_MAX_ORGS) this.news = null
    }
    this.publish('events')
  }

  private send(what: string): void {
    this.sent.set(what, performance.now())
    this.counts.published++
    let message = `${this.nodeId} ${what}`
    if (what === 'events') {
      if (this.news !== null && this.news.size > 0) message += ` ${JSON.stringify(Object.fromEntries(this.news))}`
      this.news = new Map()
    }
    // Fire and forget: Redis away means the readers' safety polls carry the news (RedisLink fails fast).
    this.link.send('PUBLISH', [WAKE_CHANNEL, message]).catch(() => {})
  }

  private async subscribe(): Promise<void> {
    if (this.stopped) return
    const client = new RedisClient(this.url, { connectionTimeout: 1_000, autoReconnect: false, maxRetries: 0, enableOfflineQueue: false })
    client.onclose = () => {
      if (this.subscriber !== client) return
      this.subscriber = undefined
      this.retry()
    }
    try {
      await client.connect()
      await client.subscribe(WAKE_CHANNEL, (message) => this.heard(message))
      if (this.stopped) return client.close()
      this.subscriber = client
      if (this.down) this.log.info('cross-node wake-ups back', { redis: this.link.where })
      this.down = false
    } catch (e) {
      client.close()
      // Once per outage: the retries go on every `retryMs` without a line each.
      if (!this.down) this.log.warn('cross-node wake-ups unavailable: readers fall back to their 1 s safety poll', { redis: this.link.where, error: e instanceof Error ? e.message : String(e) })
      this.down = true
      this.retry()
    }
  }

  private retry(): void {
    if (this.stopped) return
    clearTimeout(this.reconnect)
    this.reconnect = setTimeout(() => void this.subscribe(), this.retryMs)
  }

  /** Subscribed now (what others publish reaches this node). */
  get listening(): boolean {
    return this.subscriber !== undefined
  }

  /** When `nodeId` was last heard on this bus (any message), or undefined. */
  heardAt(nodeId: string): number | undefined {
    return this.lastHeard.get(nodeId)
  }

  private heard(message: string): void {
    const space = message.indexOf(' ')
    const from = message.slice(0, space)
    if (space <= 0 || from === this.nodeId || !this.fromPeer(from)) return
    this.counts.heard++
    // Bounded: node ids are made per process start; forget the oldest past a few hundred.
    this.lastHeard.delete(from)
    this.lastHeard.set(from, performance.now())
    if (this.lastHeard.size > 512) this.lastHeard.delete(this.lastHeard.keys().next().value!)
    const what = message.slice(space + 1)
    if (what.startsWith('events ')) return this.onWake('events', readNews(what.slice(7)))
    if (what !== ANNOUNCE) this.onWake(what)
  }
}

/** An `events` message's news, or undefined when it is not a well-formed one (the reader then looks). */
function readNews(json: string): EventNews | undefined {
  let parsed: unknown
  try {
    parsed = JSON.parse(json)
  } catch {
    return undefined
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined
  const entries = Object.entries(parsed)
  if (entries.length === 0 || entries.length > EVENT_NEWS_MAX_ORGS) return undefined
  const news = new Map<string, number>()
  for (const [org, seq] of entries) {
    if (org.length > 200 || typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1) return undefined
    news.set(org, seq)
  }
  return news
}
