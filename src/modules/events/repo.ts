/**
 * Reading the event outbox, tenant-scoped. Paging is by seq, which rises by one per Org and commits in
 * order (lifecycle/outbox.ts), so `seq > after` never skips or repeats an event even while events are
 * being written. Retention deletes whole old rows; it never renumbers.
 */
import type { Database, Statement } from 'bun:sqlite'
import { isoUtc } from '../../core/clock'
import { LAST_SEQ_SQL } from '../../db/sqlite/outbox'

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
 * One slice of retention: ranged on the id (time-ordered: its first 8 hex digits are the creation second,
 * from the clock that stamps created_at in the same call, lifecycle/outbox.ts), so the primary key's index
 * finds old events and no index on created_at is written with every event (migration 0015).
 * ?1 = idsBefore(cut), ?2 = the cut (ms).
 */
export const PURGE_SQL = 'DELETE FROM events WHERE rowid IN (SELECT rowid FROM events WHERE id < ?1 AND created_at < ?2 LIMIT 5000)'

/** One page of an Org's events: Org, after, `typeCount` types, the App when `withApp`, limit (bound in that order). */
export function pageSql(typeCount: number, withApp: boolean): string {
  const types = typeCount > 0 ? ` AND type IN (${Array(typeCount).fill('?').join(',')})` : ''
  const app = withApp ? ' AND app_id = ?' : ''
  // `+?`: same plan (events_org_seq_uq), without the ~6 µs per execution of a bound value compared
  // straight to the ordered index (lifecycle/outbox.ts, LAST_SEQ_SQL; test/perf-plans.test.ts).
  return `SELECT * FROM events WHERE org_id = +? AND seq > ?${types}${app} ORDER BY seq LIMIT ?`
}

export function createEventsRepo(sqlite: Database) {
  const lastSeq: Statement = sqlite.query(LAST_SEQ_SQL)
  const purge: Statement = sqlite.query(PURGE_SQL)
  const maxRowid: Statement = sqlite.query('SELECT COALESCE(MAX(rowid), 0) AS m FROM events')
  const orgsBetween: Statement = sqlite.query('SELECT DISTINCT org_id FROM events WHERE rowid > ? AND rowid <= ?')
  const after: Statement = sqlite.query(pageSql(0, false))
  const statements = new Map<string, Statement>()

  function pageStatement(typeCount: number, withApp: boolean): Statement {
    const key = `${typeCount}|${withApp}`
    let st = statements.get(key)
    if (!st) {
      st = sqlite.query(pageSql(typeCount, withApp))
      statements.set(key, st)
    }
    return st
  }

  return {
    /**
     * One page of an Org's events after `after`. Read in one snapshot with the Org's last seq: when the
     * page is not full, every event up to that seq was looked at, so nextAfter can skip past events the
     * filters excluded instead of making the client scan them again.
     */
    page(orgId: string, f: EventFilter): EventPage {
      const run = sqlite.transaction((): EventPage => {
        const types = f.types ?? []
        const params: (string | number)[] = [orgId, f.after, ...types]
        if (f.appId) params.push(f.appId)
        params.push(f.limit)
        const rows = pageStatement(types.length, !!f.appId).all(...params) as EventRow[]
        if (rows.length === f.limit) return { rows, nextAfter: rows[rows.length - 1].seq }
        const last = (lastSeq.get(orgId) as { last_seq: number }).last_seq
        return { rows, nextAfter: Math.max(f.after, last, rows.at(-1)?.seq ?? 0) }
      })
      // A deferred transaction: the first SELECT takes the read snapshot both queries see.
      return run.deferred()
    },

    /** The newest row's rowid: the shared watcher's one cheap question per tick. */
    maxRowid: (): number => (maxRowid.get() as { m: number }).m,

    /** Orgs with events in the rowid range (from, to]. */
    orgsBetween: (from: number, to: number): string[] => (orgsBetween.all(from, to) as { org_id: string }[]).map((r) => r.org_id),

    /** An Org's events with seq > `seq`, at most `limit`, in order: the hub's one read for all its streams. */
    after: (orgId: string, seq: number, limit: number): EventRow[] => after.all(orgId, seq, limit) as EventRow[],

    /** The Org's last seq (0 before its first event); retention never lowers it (lifecycle/outbox.ts). */
    lastSeq(orgId: string): number {
      return (lastSeq.get(orgId) as { last_seq: number }).last_seq
    },

    /** Deletes events created before `before` (ms), in batches so no single write holds the lock long. */
    purgeBefore(before: number): number {
      let total = 0
      for (;;) {
        // A transaction per slice: it takes its write turn ahead of the processing thread (db/write-turns.ts).
        const n = sqlite.transaction(() => purge.run(idsBefore(before), before).changes).immediate()
        total += n
        if (n < 5000) return total
      }
    },
  }
}
export type EventsRepo = ReturnType<typeof createEventsRepo>
