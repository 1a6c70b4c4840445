/**
 * The recording kept in memory: a list of segments, each starting with a full snapshot (rrweb's Meta +
 * FullSnapshot, taken at start and then every checkout interval), followed by its incremental events.
 * A segment is dropped once the next one starts before the window (the next one's snapshot can replay
 * the whole window without it), and the oldest segments go as soon as the estimated serialized size
 * passes the hard cap. When the one remaining segment alone passes the cap, a new full snapshot is
 * asked for (the old segment then goes); a page whose snapshot alone is over the cap is not recorded.
 */

/** The part of rrweb's eventWithTime the buffer reads. */
export interface TimedEvent {
  type: number
  timestamp: number
  data: unknown
}

interface Segment {
  events: TimedEvent[]
  bytes: number
  start: number
}

/** rrweb's EventType.Meta: the first event of every full snapshot. */
const META = 4

export class ReplayBuffer {
  private segments: Segment[] = []
  private total = 0
  private heldAt?: number
  private forcing = false
  /** Set once a single full snapshot was over the cap: recording stopped for this page. */
  overflow = false

  constructor(
    private readonly windowMs: number,
    readonly maxBytes: number,
    /** Asks the recorder for a new full snapshot (rrweb's takeFullSnapshot(true)); synchronous. */
    private readonly checkout: () => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** Adds one event; `size` is its serialized length (estimated once, here, not at send time). */
  push(event: TimedEvent): void {
    if (this.overflow) return
    const size = JSON.stringify(event).length
    if (event.type === META || !this.segments.length) this.segments.push({ events: [], bytes: 0, start: event.timestamp })
    const last = this.segments[this.segments.length - 1]
    last.events.push(event)
    last.bytes += size
    this.total += size
    this.prune()
  }

  private prune(): void {
    const cutoff = (this.heldAt ?? this.now()) - this.windowMs
    while (this.segments.length > 1 && this.segments[1].start <= cutoff) this.dropOldest()
    while (this.total > this.maxBytes && this.segments.length > 1) this.dropOldest()
    if (this.total <= this.maxBytes || this.forcing) return
    // One segment, over the cap: start a new one from a fresh snapshot, unless it is only its snapshot.
    if (this.segments[0].events.length > 2) {
      this.forcing = true
      try {
        this.checkout()
      } finally {
        this.forcing = false
      }
      while (this.total > this.maxBytes && this.segments.length > 1) this.dropOldest()
    }
    if (this.total > this.maxBytes) {
      this.overflow = true
      this.segments = []
      this.total = 0
    }
  }

  private dropOldest(): void {
    this.total -= this.segments.shift()!.bytes
  }

  /** The moment of the report: the window stays the N seconds before it (still under the cap). */
  hold(at: number): void {
    this.heldAt = at
  }

  release(): void {
    this.heldAt = undefined
  }

  /**
   * The page's user signed out (Fixloop.resetUser): nothing recorded before goes with the next user's
   * report. The recording goes on from a fresh full snapshot of the page as it is now.
   */
  forget(): void {
    this.segments = []
    this.total = 0
    this.heldAt = undefined
    if (!this.overflow) this.checkout()
  }

  get held(): number | undefined {
    return this.heldAt
  }

  /** The segments, oldest first (copies of the lists: recording goes on while a report is built). */
  snapshot(): TimedEvent[][] {
    return this.segments.map((s) => s.events.slice())
  }

  stats(): { bytes: number; segments: number; events: number; maxBytes: number; oldest?: number; overflow: boolean } {
    let events = 0
    for (const s of this.segments) events += s.events.length
    return { bytes: this.total, segments: this.segments.length, events, maxBytes: this.maxBytes, oldest: this.segments[0]?.start, overflow: this.overflow }
  }
}
