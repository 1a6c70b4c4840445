/** SQLite side of modules/events/repo.ts. */
import type { Statement } from 'bun:sqlite'
import { idsBefore, type EventPage, type EventRow, type EventsRepo, type WatchMark } from '../../modules/events/repo'
import { LAST_SEQ_SQL } from './outbox'
import type { SqliteStorage } from './storage'

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

export function createSqliteEventsRepo({ sqlite }: SqliteStorage): EventsRepo {
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
  const last = (orgId: string): number => (lastSeq.get(orgId) as { last_seq: number }).last_seq

  return {
    async page(orgId, f) {
      const run = sqlite.transaction((): EventPage => {
        const types = f.types ?? []
        const params: (string | number)[] = [orgId, f.after, ...types]
        if (f.appId) params.push(f.appId)
        params.push(f.limit)
        const rows = pageStatement(types.length, !!f.appId).all(...params) as EventRow[]
        if (rows.length === f.limit) return { rows, nextAfter: rows[rows.length - 1].seq }
        return { rows, nextAfter: Math.max(f.after, last(orgId), rows.at(-1)?.seq ?? 0) }
      })
      // A deferred transaction: the first SELECT takes the read snapshot both queries see.
      return run.deferred()
    },

    after: async (orgId, seq, limit) => after.all(orgId, seq, limit) as EventRow[],

    lastSeq: async (orgId) => last(orgId),

    async look(since: WatchMark | null, wantOrgs: boolean) {
      // The newest row's rowid: one cheap question per tick.
      const max = (maxRowid.get() as { m: number }).m
      const from = typeof since === 'number' ? since : max
      if (!wantOrgs || max === from) return { mark: max, orgs: [] }
      // Retention emptied the table and rowids restarted: everything up to max is new.
      const lower = max < from ? 0 : from
      return { mark: max, orgs: (orgsBetween.all(lower, max) as { org_id: string }[]).map((r) => r.org_id) }
    },

    // Nothing announces news on SQLite (one process: the hub's 100 ms look is the wake): the rowid stays.
    advance: (mark) => mark,

    async purgeBefore(before) {
      let total = 0
      for (;;) {
        // A transaction per slice: it takes its write turn ahead of the processing thread (db/sqlite/write-turns.ts).
        const n = sqlite.transaction(() => purge.run(idsBefore(before), before).changes).immediate()
        total += n
        if (n < 5000) return total
      }
    },
  }
}
