/**
 * Appends events to the outbox. Call it inside the transaction that makes the change the event records:
 * the row and its event commit together or not at all, and a kill -9 in between leaves neither.
 *
 * seq is read inside that same transaction: one more than the larger of the Org's newest event (an index
 * seek on events_org_seq_uq) and its floor in `event_counters`, which only deletes raise (the
 * events_seq_floor trigger, migration 0015: deleting an Org's newest event records its seq). Reading
 * instead of bumping a counter row saves an upsert per event on the intake path. SQLite has one writer
 * at a time (both threads' connections append inside write transactions), so seq N always commits
 * before seq N+1 is handed out: a reader paging by `seq > after` never skips one, and no seq is reused.
 */
import type { Database, Statement } from 'bun:sqlite'
import type { Clock } from '../../core/clock'
import { newId } from '../../core/ids'
import type { OutboxEvent } from '../../lifecycle/event-types'

export type { OutboxEvent, StoredEvent } from '../../lifecycle/event-types'

/**
 * The last seq an Org has had (0 for none): its newest event, or the floor retention and other deletes
 * left in event_counters when they removed it. `?1` is the Org id.
 *
 * `+?1`, not `?1`: measured with bun's SQLite, a bound parameter compared straight to an indexed column
 * in a query with ORDER BY (or MAX) on that index makes every new binding cost ~5 µs more (as if the
 * statement were compiled again); the unary plus keeps the same plan (a seek on events_org_seq_uq,
 * test/perf-plans.test.ts) at ~0.7 µs.
 */
export const LAST_SEQ_SQL = `SELECT MAX(
  IFNULL((SELECT seq FROM events WHERE org_id = +?1 ORDER BY seq DESC LIMIT 1), 0),
  IFNULL((SELECT last_seq FROM event_counters WHERE org_id = ?1), 0)) AS last_seq`

export function createOutbox(sqlite: Database, clock: Clock) {
  const nextSeq: Statement = sqlite.query(LAST_SEQ_SQL.replace('AS last_seq', '+ 1 AS seq'))
  const insert: Statement = sqlite.query(
    'INSERT INTO events (id, org_id, app_id, seq, type, data, created_at, feedback_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  )

  return {
    /**
     * Must run inside the caller's transaction (see the module comment), one that holds the write lock
     * already: begun IMMEDIATE (the group commit, lifecycle.move, every `.immediate()`) or that has written
     * before. Its first statement is a read, and a deferred transaction whose snapshot another connection
     * outdated cannot upgrade to write (SQLITE_BUSY_SNAPSHOT). Returns the event's seq.
     */
    append(event: OutboxEvent): number {
      if (!sqlite.inTransaction) throw new Error('outbox.append must run inside the transaction of the change')
      const { seq } = nextSeq.get(event.orgId) as { seq: number }
      // The report's id in its own column: indexed without parsing the JSON (a third of an event's insert).
      const feedbackId = (event.data as { feedbackId?: unknown }).feedbackId
      insert.run(newId(clock), event.orgId, event.appId, seq, event.type, JSON.stringify(event.data), clock.now(), typeof feedbackId === 'string' ? feedbackId : null)
      return seq
    },
  }
}
export type Outbox = ReturnType<typeof createOutbox>
