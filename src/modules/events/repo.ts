/**
 * Reading the event outbox, tenant-scoped. Paging is by seq, which rises by one per Org and commits in
 * order (lifecycle/outbox.ts), so `seq > after` never skips or repeats an event even while events are
 * being written. Retention deletes whole old rows; it never renumbers.
 */
import { isoUtc } from '../../core/clock'

export interface EventRow {
  id: string
  org_id: string
  app_id: string | null
  seq: number
  type: string
  data: string
  created_at: number
}

/** The public JSON shape of an event (CONTRACT.md, Events). */
export interface EventJson {
  id: string
  seq: number
  type: string
  createdAt: string
  appId: string | null
  data: Record<string, unknown>
}

export function presentEvent(r: EventRow): EventJson {
  return { id: r.id, seq: r.seq, type: r.type, createdAt: isoUtc(r.created_at), appId: r.app_id, data: JSON.parse(r.data) }
}

/** The exact bytes a consumer receives for an event: the SSE data line and the webhook body. */
export function eventBody(r: EventRow): string {
  return `{"id":${JSON.stringify(r.id)},"seq":${r.seq},"type":${JSON.stringify(r.type)},"createdAt":"${isoUtc(r.created_at)}","appId":${JSON.stringify(r.app_id)},"data":${r.data}}`
}

export interface EventFilter {
  after: number
  limit: number
  types?: readonly string[]
  appId?: string
}

export interface EventPage {
  rows: EventRow[]
  /** The cursor to pass as `after` next time: past every event this page looked at. */
  nextAfter: number
}

/**
 * Every id made before the second after `before` (ms) sorts below this: ids start with their creation
 * second in 8 hex digits (core/ids.ts). The caller still checks created_at for the exact cut.
 */
export function idsBefore(before: number): string {
  const second = Math.max(0, Math.min(0xffffffff, Math.floor(before / 1000) + 1))
  return second.toString(16).padStart(8, '0')
}

/**
 * Where the shared watcher (hub.ts) stands in the outbox; opaque to it, and its own (`advance` may change
 * it in place). SQLite: the newest row's rowid. PostgreSQL (no rowid): every Org's
 * `event_counters.last_seq` as far as the watcher knows, and their sum, which every committed append
 * raises (and nothing lowers), so one cheap SUM tells whether anything changed that it has not heard of.
 */
export type WatchMark = number | { total: number; seqs: Map<string, number> }

/** Orgs that got events, each with its last seq after them, as committed (the wake's news). */
export type OrgSeqs = ReadonlyMap<string, number>

export interface WatchLook {
  mark: WatchMark
  /** Orgs with events appended since the previous mark (empty when `wantOrgs` was false). */
  orgs: string[]
}

export interface EventsRepo {
  /**
   * One page of an Org's events after `after`. Read in one snapshot with the Org's last seq: when the
   * page is not full, every event up to that seq was looked at, so nextAfter can skip past events the
   * filters excluded instead of making the client scan them again.
   */
  page(orgId: string, f: EventFilter): Promise<EventPage>
  /** An Org's events with seq > `seq`, at most `limit`, in order: the hub's one read for all its streams. */
  after(orgId: string, seq: number, limit: number): Promise<EventRow[]>
  /** The Org's last seq (0 before its first event); retention never lowers it. */
  lastSeq(orgId: string): Promise<number>
  /**
   * The shared watcher's one cheap question per tick: the mark now and, when `wantOrgs`, the Orgs that
   * got events since `since` (null: the first look, no Orgs).
   */
  look(since: WatchMark | null, wantOrgs: boolean, recount?: boolean): Promise<WatchLook>
  /**
   * The mark once `news` is known without reading anything: on PostgreSQL each named Org's seq and the
   * sum are raised to the news (only committed seqs are announced, so the mark never passes the
   * counters, and the next look's SUM equals the mark unless something was not heard). `recount` on a
   * look skips that SUM shortcut and reads every counter (the watcher's occasional check of its mark).
   * SQLite (no announcements) keeps its mark.
   */
  advance(mark: WatchMark, news: OrgSeqs): WatchMark
  /** Deletes events created before `before` (ms), in batches so no single write holds the lock long. */
  purgeBefore(before: number): Promise<number>
}

