/**
 * PostgreSQL side of modules/events/repo.ts. An Org's last seq is its `event_counters` row (bumped by
 * every append in the append's transaction, src/db/pg/outbox.ts); seqs are handed out in commit order per
 * Org, so reading `seq > after` never skips one that commits later.
 */
import type { EventFilter, EventPage, EventRow, EventsRepo, WatchMark } from '../../modules/events/repo'
import { idsBefore } from '../../modules/events/repo'
import { many, one, exec, type PgStorage } from './storage'
import { PG_LAST_SEQ_SQL } from './outbox'

const COLUMNS = 'id, org_id, app_id, seq, type, data, created_at'
const PURGE = 'DELETE FROM events WHERE id IN (SELECT id FROM events WHERE id < $1 AND created_at < $2 ORDER BY id LIMIT 5000)'

/**
 * One page and the Org's last seq in one statement, so one snapshot: the head is read with the rows, and
 * every event up to it is visible to the page (seq N commits before N+1 is handed out).
 */
function pageQuery(orgId: string, f: EventFilter): { text: string; params: unknown[] } {
  const params: unknown[] = [orgId, f.after, f.limit]
  let where = ''
  if (f.types && f.types.length > 0) {
    params.push([...f.types])
    where += ` AND e.type = ANY($${params.length}::text[])`
  }
  if (f.appId) {
    params.push(f.appId)
    where += ` AND e.app_id = $${params.length}`
  }
  const cols = COLUMNS.split(', ').map((c) => `e.${c}`).join(', ')
  const text = `SELECT h.head, p.* FROM (SELECT COALESCE((SELECT last_seq FROM event_counters WHERE org_id = $1), 0) AS head) h
    LEFT JOIN LATERAL (SELECT ${cols} FROM events e WHERE e.org_id = $1 AND e.seq > $2${where} ORDER BY e.seq LIMIT $3) p ON true ORDER BY p.seq`
  return { text, params }
}

export function createPgEventsRepo({ pool }: PgStorage): EventsRepo {
  const lastSeq = async (orgId: string) => (await one<{ last_seq: number }>(pool, PG_LAST_SEQ_SQL, [orgId]))!.last_seq
  const counters = async () => {
    const rows = await many<{ org_id: string; last_seq: number }>(pool, 'SELECT org_id, last_seq FROM event_counters ORDER BY org_id')
    const seqs = new Map<string, number>()
    let total = 0
    for (const r of rows) {
      seqs.set(r.org_id, r.last_seq)
      total += r.last_seq
    }
    return { total, seqs }
  }
  return {
    async page(orgId, f): Promise<EventPage> {
      const q = pageQuery(orgId, f)
      const out = await many<EventRow & { head: number }>(pool, q.text, q.params)
      const head = out[0]?.head ?? 0
      const rows: EventRow[] = out.filter((r) => r.id !== null).map(({ head: _h, ...r }) => r)
      if (rows.length === f.limit) return { rows, nextAfter: rows[rows.length - 1].seq }
      return { rows, nextAfter: Math.max(f.after, head, rows.at(-1)?.seq ?? 0) }
    },

    after: (orgId, seq, limit) => many<EventRow>(pool, `SELECT ${COLUMNS} FROM events WHERE org_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, [orgId, seq, limit]),

    lastSeq,

    async look(since: WatchMark | null, wantOrgs: boolean, recount = false) {
      const prev = since !== null && typeof since === 'object' ? since : null
      if (prev && !recount) {
        // The cheap question: has any Org's counter moved? (A sum that only committed appends raise.)
        const { total } = (await one<{ total: number }>(pool, 'SELECT COALESCE(SUM(last_seq), 0) AS total FROM event_counters'))!
        if (total === prev.total) return { mark: prev, orgs: [] }
      }
      const now = await counters()
      if (!prev || !wantOrgs) return { mark: now, orgs: [] }
      const orgs = [...now.seqs].filter(([org, seq]) => seq > (prev.seqs.get(org) ?? 0)).map(([org]) => org)
      return { mark: now, orgs }
    },

    advance(mark, news) {
      if (typeof mark !== 'object') return mark
      for (const [org, seq] of news) {
        const was = mark.seqs.get(org) ?? 0
        if (seq <= was) continue
        mark.seqs.set(org, seq)
        mark.total += seq - was
      }
      return mark
    },

    async purgeBefore(before) {
      let total = 0
      for (;;) {
        // A statement per slice (its own transaction): no single delete holds its locks long.
        const n = await exec(pool, PURGE, [idsBefore(before), before])
        total += n
        if (n < 5000) return total
      }
    },
  }
}
