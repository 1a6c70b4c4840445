/**
 * One shared watcher of the outbox for the whole process. It polls a single cheap query (the highest
 * rowid of `events`) on one timer and, when events arrived:
 * - tells the dispatchers (webhooks, Slack) which Orgs got some; they read by their own cursors;
 * - for each Org with open streams, reads the new events once, by seq, in pages of SHARED_PAGE, and hands
 *   each page (an EventBatch, its bytes built once) to every stream of that Org. A caught-up stream
 *   never queries on its own, however many events arrive in a tick.
 * Streams that are behind read their backlog through the hub's CatchUpQueue (catch-up.ts), in bounded
 * slices between which the event loop serves requests. Nothing hooks into the write path: events written
 * by the worker, another thread or the CLI are seen the same way.
 */
import { EventBatch } from './batch'
import { CatchUpQueue } from './catch-up'
import type { EventsRepo } from './repo'

/** Told of a batch of new events of its Org (consecutive seqs, in order); returns the bytes it queued. */
export type StreamListener = (batch: EventBatch) => number
/** Told that an Org has new events (the dispatchers read them by their own cursor). */
export type OrgListener = (orgId: string) => void

/** Events per shared read: a page joined into one chunk per stream (~60 KB at ~300 bytes an event). */
export const SHARED_PAGE = 200
/**
 * A fan-out slice ends after this long or once this many bytes were queued to streams, whichever comes
 * first; the rest follows on the next turn, after the loop has polled I/O. Bytes count because writing
 * them to the sockets (after the slice, in the same turn) costs more than the slice itself: ~100 ms per
 * 80 MB on loopback, which one page to 1,000 streams would reach.
 */
const FAN_OUT_SLICE_MS = 8
const FAN_OUT_SLICE_BYTES = 4 * 1024 * 1024

export interface EventHubOptions {
  /** How often the outbox is checked. */
  pollMs: number
  /** Heartbeat period handed to `onHeartbeat` listeners. */
  heartbeatMs: number
}

/** The open streams of one Org and how far the shared read has gone (the last seq handed to them). */
interface OrgFeed {
  listeners: Set<StreamListener>
  seq: number
  /** New events may be waiting past `seq`. */
  pending: boolean
  /** A batch still being handed out: the listeners that have not had it yet. */
  handing?: { batch: EventBatch; rest: StreamListener[]; next: number }
}

export class EventHub {
  private readonly feeds = new Map<string, OrgFeed>()
  private readonly anyOrg = new Set<OrgListener>()
  private readonly heartbeats = new Set<() => void>()
  private readonly closers = new Set<() => void>()
  /** Where streams that are behind read their backlog, a slice per turn. */
  readonly catchUp = new CatchUpQueue()
  private lastRowid: number
  private poller: ReturnType<typeof setInterval> | undefined
  private beater: ReturnType<typeof setInterval> | undefined
  private fanOutTimer: ReturnType<typeof setTimeout> | undefined

  constructor(
    private readonly repo: EventsRepo,
    private readonly opts: EventHubOptions,
  ) {
    this.lastRowid = repo.maxRowid()
  }

  start(): void {
    this.poller ??= setInterval(() => {
      // A failed look (SQLITE_BUSY while the WAL is truncated) is simply repeated at the next poll; thrown
      // from a timer it would end the process.
      try {
        this.check()
      } catch {
        // next poll
      }
    }, this.opts.pollMs)
    this.beater ??= setInterval(() => {
      for (const beat of this.heartbeats) beat()
    }, this.opts.heartbeatMs)
  }

  /** Stops the timers and ends every open stream, so a graceful shutdown does not wait on them. */
  stop(): void {
    clearInterval(this.poller)
    clearInterval(this.beater)
    clearTimeout(this.fanOutTimer)
    this.poller = this.beater = this.fanOutTimer = undefined
    this.catchUp.stop()
    for (const close of [...this.closers]) close()
  }

  /** Registers a function that ends a long-lived response at shutdown; returns the unregister function. */
  onStop(close: () => void): () => void {
    this.closers.add(close)
    return () => this.closers.delete(close)
  }

  /**
   * Listens for new events of one Org; returns the unsubscribe function. The first batch it can get
   * starts after the Org's last seq at this moment: a stream reads what came before on its own.
   */
  subscribe(orgId: string, listener: StreamListener): () => void {
    let feed = this.feeds.get(orgId)
    if (!feed) this.feeds.set(orgId, (feed = { listeners: new Set(), seq: this.repo.lastSeq(orgId), pending: false }))
    feed.listeners.add(listener)
    const own = feed
    return () => {
      own.listeners.delete(listener)
      if (own.listeners.size === 0 && this.feeds.get(orgId) === own) this.feeds.delete(orgId)
    }
  }

  /** Listens for new events of every Org (the dispatchers). */
  subscribeAll(listener: OrgListener): () => void {
    this.anyOrg.add(listener)
    return () => this.anyOrg.delete(listener)
  }

  onHeartbeat(beat: () => void): () => void {
    this.heartbeats.add(beat)
    return () => this.heartbeats.delete(beat)
  }

  /** Open subscriptions of one Org (the stream route caps them). */
  countFor(orgId: string): number {
    return this.feeds.get(orgId)?.listeners.size ?? 0
  }

  get subscriberCount(): number {
    let n = 0
    for (const f of this.feeds.values()) n += f.listeners.size
    return n
  }

  /** Checks the outbox once; the timer calls it, tests and in-process writers may call it to skip the wait. */
  check(): void {
    if (this.feeds.size === 0 && this.anyOrg.size === 0) {
      this.lastRowid = this.repo.maxRowid()
      return
    }
    const max = this.repo.maxRowid()
    // Retention emptied the table and rowids restarted: everything up to max is new to us.
    if (max < this.lastRowid) this.lastRowid = 0
    if (max !== this.lastRowid) {
      const orgs = this.repo.orgsBetween(this.lastRowid, max)
      this.lastRowid = max
      for (const orgId of orgs) {
        const feed = this.feeds.get(orgId)
        if (feed) feed.pending = true
      }
      for (const orgId of orgs) for (const listener of this.anyOrg) listener(orgId)
    }
    this.fanOut()
  }

  /**
   * One shared read per Org with news, handed to all of its streams: at most one page per Org per turn,
   * so between two pages the loop polls I/O and the sockets drain what the last one queued (a stream
   * whose client keeps up then stays live through a long burst). A slice also stops at FAN_OUT_SLICE_MS
   * or FAN_OUT_SLICE_BYTES, even halfway through a batch's listeners, and goes on at the next turn; an
   * Org's next page is read only once every listener had the previous one.
   */
  private fanOut(): void {
    const end = performance.now() + FAN_OUT_SLICE_MS
    let bytes = 0
    let more = false
    for (const [orgId, feed] of this.feeds) {
      if (!feed.handing) {
        if (!feed.pending) continue
        if (bytes >= FAN_OUT_SLICE_BYTES || performance.now() >= end) return this.fanOutLater()
        const rows = this.repo.after(orgId, feed.seq, SHARED_PAGE)
        if (rows.length < SHARED_PAGE) feed.pending = false
        if (rows.length === 0) continue
        const batch = new EventBatch(orgId, rows)
        feed.seq = batch.last
        // Streams that subscribe from now on start past this batch: they read it themselves if they need it.
        feed.handing = { batch, rest: [...feed.listeners], next: 0 }
      }
      const h = feed.handing
      while (h.next < h.rest.length) {
        if (bytes >= FAN_OUT_SLICE_BYTES || performance.now() >= end) return this.fanOutLater()
        bytes += h.rest[h.next++](h.batch)
      }
      feed.handing = undefined
      more ||= feed.pending
    }
    if (more) this.fanOutLater()
  }

  private fanOutLater(): void {
    this.fanOutTimer ??= setTimeout(() => {
      this.fanOutTimer = undefined
      try {
        this.fanOut()
      } catch {
        // The next poll tries again: the Orgs are still pending.
      }
    }, 0)
  }
}
