/**
 * One shared watcher of the outbox for the whole process. It polls a single cheap query (the highest
 * rowid of `events`; on PostgreSQL the sum of the Orgs' counters) on one timer, or is told the news
 * (`heard`: in cluster mode every commit that appended events names its Orgs, on this node and through
 * the wake bus on the others, so no node reads the counters per commit), and, when events arrived:
 * - tells the dispatchers (webhooks, Slack) which Orgs got some; they read by their own cursors;
 * - for each Org with open streams, reads the new events once, by seq, in pages of SHARED_PAGE, and hands
 *   each page (an EventBatch, its bytes built once) to every stream of that Org. A caught-up stream
 *   never queries on its own, however many events arrive in a tick.
 * Streams that are behind read their backlog through the hub's CatchUpQueue (catch-up.ts), in bounded
 * slices between which the event loop serves requests. Nothing hooks into the write path: events written
 * by the worker, another thread or the CLI are seen the same way.
 *
 * The repository is async (SQLite or PostgreSQL). On SQLite its calls run their statement at once and
 * only hand the result a microtask later, so a look and a fan-out slice still finish within the turn that
 * started them; on PostgreSQL one look and one fan-out run at a time (a call that comes while one runs
 * makes it go round once more).
 */
import { EventBatch } from './batch'
import { CatchUpQueue } from './catch-up'
import type { EventsRepo, OrgSeqs, WatchMark } from './repo'

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
/**
 * How often a poll reads every counter instead of trusting its mark (PostgreSQL): the mark is raised by
 * heard news, and news that named a seq which never committed (a bug, not a path the code has) would
 * otherwise hide a lost wake-up until that Org's next event. One scan a minute per node bounds that.
 */
const RECOUNT_MS = 60_000

export interface EventHubOptions {
  /** How often the outbox is checked. */
  pollMs: number
  /** Heartbeat period handed to `onHeartbeat` listeners. */
  heartbeatMs: number
}

/** The open streams of one Org and how far the shared read has gone (the last seq handed to them). */
interface OrgFeed {
  listeners: Set<StreamListener>
  /** Undefined until the Org's last seq at subscription time has been read (`ready`). */
  seq: number | undefined
  ready: Promise<void> | undefined
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
  private mark: WatchMark | null = null
  /** The look in progress (one at a time), and whether another was asked for meanwhile. */
  private looking: Promise<void> | undefined
  private lookAgain = false
  /** The next look reads every counter (RECOUNT_MS). */
  private recountNext = false
  private polls = 0
  /** News heard while a look is reading (its mark, older, is raised by them when it lands). */
  private heardMeanwhile: Map<string, number> | undefined
  /** A fan-out slice in progress (one at a time), and whether another was asked for meanwhile. */
  private fanning = false
  private fanAgain = false
  private poller: ReturnType<typeof setInterval> | undefined
  private beater: ReturnType<typeof setInterval> | undefined
  private fanOutTimer: ReturnType<typeof setTimeout> | undefined

  constructor(
    private readonly repo: EventsRepo,
    private readonly opts: EventHubOptions,
  ) {
    // Where the outbox stands now: events appended from here on are new. (On SQLite the read runs here.)
    this.check().catch(() => {
      // The next poll takes the first look.
    })
  }

  start(): void {
    const recountEvery = Math.max(1, Math.round(RECOUNT_MS / this.opts.pollMs))
    this.poller ??= setInterval(() => {
      // A failed look (SQLITE_BUSY while the WAL is truncated) is simply repeated at the next poll; thrown
      // from a timer it would end the process.
      this.check(++this.polls % recountEvery === 0).catch(() => {
        // next poll
      })
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
    if (!feed) {
      feed = { listeners: new Set(), seq: undefined, ready: undefined, pending: false }
      this.feeds.set(orgId, feed)
      this.readSeq(orgId, feed)
    }
    feed.listeners.add(listener)
    const own = feed
    return () => {
      own.listeners.delete(listener)
      if (own.listeners.size === 0 && this.feeds.get(orgId) === own) this.feeds.delete(orgId)
    }
  }

  /**
   * Resolves once the Org's feed knows where it starts. A stream waits for it before its first catch-up
   * read, so that read's snapshot is no older than the feed's start: no event falls between the page that
   * makes the stream live and the first batch the hub hands it.
   */
  whenReady(orgId: string): Promise<void> {
    return this.feeds.get(orgId)?.ready ?? Promise.resolve()
  }

  /** Reads where a new feed starts (the Org's last seq at this moment); a failed read is tried again by fanOut. */
  private readSeq(orgId: string, feed: OrgFeed): void {
    const ready: Promise<void> = this.repo
      .lastSeq(orgId)
      .then(
        (seq) => void (feed.seq ??= seq),
        () => {
          // Left undefined: the next fan-out reads it again.
        },
      )
      .then(() => {
        if (feed.ready === ready) feed.ready = undefined
      })
    feed.ready = ready
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

  /**
   * Checks the outbox once; the timer calls it, tests and in-process writers may call it to skip the wait.
   * Resolves when the look is done (its fan-out may go on in later turns).
   */
  check(recount = false): Promise<void> {
    this.recountNext ||= recount
    if (this.looking) {
      this.lookAgain = true
      return this.looking
    }
    const run = async () => {
      do {
        this.lookAgain = false
        await this.look()
      } while (this.lookAgain)
    }
    this.looking = run().finally(() => (this.looking = undefined))
    return this.looking
  }

  /**
   * News of committed events, with no read: `news` names the Orgs and each one's last seq (a commit of
   * this node, or of another one through the wake bus). Their streams and the dispatchers are told as a
   * look would tell them, and the mark takes the seqs, so the next poll's one cheap question finds
   * nothing it has not heard of. `null`: some Orgs, unknown which: the outbox is looked at.
   */
  heard(news: OrgSeqs | null): void {
    if (news === null) {
      // A failed look is repeated by the next poll.
      this.check().catch(() => {})
      return
    }
    if (this.mark !== null) this.mark = this.repo.advance(this.mark, news)
    if (this.heardMeanwhile) for (const [orgId, seq] of news) if (seq > (this.heardMeanwhile.get(orgId) ?? 0)) this.heardMeanwhile.set(orgId, seq)
    if (this.feeds.size === 0 && this.anyOrg.size === 0) return
    // Called from a commit or a Redis message: a listener's throw stays here, as a look's would (the
    // listeners read by their own cursors, so the next news or poll makes up for it).
    try {
      this.tell(news.keys())
    } catch {
      // see above
    }
  }

  private async look(): Promise<void> {
    const wanted = this.feeds.size > 0 || this.anyOrg.size > 0
    // Nobody here listens: the look costs nothing. The mark stays where it was, so the first look once
    // someone listens names every Org with events since (more than needed is harmless: readers go by
    // their own cursors). The first look always runs: it learns where the outbox stands.
    if (!wanted && this.mark !== null) return
    const recount = this.recountNext
    this.recountNext = false
    this.heardMeanwhile = new Map()
    let orgs: string[]
    try {
      // The first look (mark null) only learns where the outbox stands: it names no Org.
      const look = await this.repo.look(this.mark, wanted, recount)
      this.mark = this.repo.advance(look.mark, this.heardMeanwhile)
      orgs = look.orgs
    } finally {
      this.heardMeanwhile = undefined
    }
    if (wanted) this.tell(orgs)
  }

  /** Orgs have news: their streams' feeds go pending, the dispatchers are told, the fan-out runs. */
  private tell(orgs: Iterable<string>): void {
    const list = [...orgs]
    for (const orgId of list) {
      const feed = this.feeds.get(orgId)
      if (feed) feed.pending = true
    }
    for (const orgId of list) for (const listener of this.anyOrg) listener(orgId)
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
    if (this.fanning) {
      this.fanAgain = true
      return
    }
    this.fanning = true
    this.fanOutSlice()
      .catch(() => {
        // The next poll tries again: the Orgs are still pending.
      })
      .finally(() => {
        this.fanning = false
        if (this.fanAgain) {
          this.fanAgain = false
          this.fanOutLater()
        }
      })
  }

  private async fanOutSlice(): Promise<void> {
    const end = performance.now() + FAN_OUT_SLICE_MS
    let bytes = 0
    let more = false
    for (const [orgId, feed] of this.feeds) {
      if (!feed.handing) {
        if (!feed.pending) continue
        if (feed.seq === undefined) {
          // Its start is still being read (or the read failed: read it again); it stays pending, and the
          // fan-out goes on once the start is known (after a failed read: at the next poll).
          if (!feed.ready) this.readSeq(orgId, feed)
          void feed.ready?.then(() => {
            if (feed.seq !== undefined) this.fanOut()
          })
          continue
        }
        if (bytes >= FAN_OUT_SLICE_BYTES || performance.now() >= end) return this.fanOutLater()
        const rows = await this.repo.after(orgId, feed.seq, SHARED_PAGE)
        // The last stream of the Org left (or it was replaced) during the read.
        if (this.feeds.get(orgId) !== feed) continue
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
      this.fanOut()
    }, 0)
  }
}
