/**
 * One shared watcher of the outbox for the whole process. It polls a single cheap query (the highest
 * rowid of `events`) on one timer and, when events arrived, tells only the subscribers of the Orgs that
 * got them. Subscribers (event streams, the webhook and Slack dispatchers) then read what they need by
 * seq themselves. So 1,000 idle streams cost one query per tick, not 1,000, and nothing hooks into the
 * write path: events written by the worker, another thread or the CLI are seen the same way.
 */
import type { EventRow, EventsRepo } from './repo'

/**
 * Told that an Org has new events. `rows` are those events (all of them, in seq order) when the batch
 * was small enough to read once for everyone; otherwise undefined, and the listener reads by seq.
 */
export type OrgListener = (orgId: string, rows?: readonly EventRow[]) => void

/** Up to this many new events per check are read once and handed to every listener. */
const SHARED_BATCH_MAX = 256

export interface EventHubOptions {
  /** How often the outbox is checked. */
  pollMs: number
  /** Heartbeat period handed to `onHeartbeat` listeners. */
  heartbeatMs: number
}

export class EventHub {
  private readonly byOrg = new Map<string, Set<OrgListener>>()
  private readonly anyOrg = new Set<OrgListener>()
  private readonly heartbeats = new Set<() => void>()
  private readonly closers = new Set<() => void>()
  private lastRowid: number
  private poller: ReturnType<typeof setInterval> | undefined
  private beater: ReturnType<typeof setInterval> | undefined

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
    this.poller = this.beater = undefined
    for (const close of [...this.closers]) close()
  }

  /** Registers a function that ends a long-lived response at shutdown; returns the unregister function. */
  onStop(close: () => void): () => void {
    this.closers.add(close)
    return () => this.closers.delete(close)
  }

  /** Listens for new events of one Org; returns the unsubscribe function. */
  subscribe(orgId: string, listener: OrgListener): () => void {
    let set = this.byOrg.get(orgId)
    if (!set) this.byOrg.set(orgId, (set = new Set()))
    set.add(listener)
    return () => {
      set.delete(listener)
      if (set.size === 0 && this.byOrg.get(orgId) === set) this.byOrg.delete(orgId)
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
    return this.byOrg.get(orgId)?.size ?? 0
  }

  get subscriberCount(): number {
    let n = 0
    for (const s of this.byOrg.values()) n += s.size
    return n
  }

  /** Checks the outbox once; the timer calls it, tests and in-process writers may call it to skip the wait. */
  check(): void {
    if (this.byOrg.size === 0 && this.anyOrg.size === 0) {
      this.lastRowid = this.repo.maxRowid()
      return
    }
    const max = this.repo.maxRowid()
    // Retention emptied the table and rowids restarted: everything up to max is new to us.
    if (max < this.lastRowid) this.lastRowid = 0
    if (max === this.lastRowid) return
    const orgs = this.repo.orgsBetween(this.lastRowid, max)
    const byOrg = new Map<string, EventRow[] | undefined>(orgs.map((o) => [o, undefined]))
    // The rows themselves are read (once, for every stream) only when a stream of one of these Orgs is open.
    if (orgs.some((o) => this.byOrg.has(o))) {
      const rows = this.repo.rowsBetween(this.lastRowid, max, SHARED_BATCH_MAX + 1)
      if (rows.length <= SHARED_BATCH_MAX) {
        for (const r of rows) {
          const list = byOrg.get(r.org_id)
          if (list) list.push(r)
          else byOrg.set(r.org_id, [r])
        }
      }
    }
    this.lastRowid = max
    for (const [orgId, orgRows] of byOrg) {
      for (const listener of this.byOrg.get(orgId) ?? []) listener(orgId, orgRows)
      for (const listener of this.anyOrg) listener(orgId, orgRows)
    }
  }
}
