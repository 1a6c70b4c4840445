/**
 * Appends events to the outbox. Call it inside the transaction that makes the change the event records:
 * the row and its event commit together or not at all, and a kill -9 in between leaves neither.
 *
 * seq comes from `event_counters` inside that same transaction. SQLite has one writer at a time, so
 * seq N always commits before seq N+1 is handed out: a reader paging by `seq > after` never skips one.
 */
import type { Database, Statement } from 'bun:sqlite'
import type { Clock } from '../core/clock'
import { newId } from '../core/ids'
import type { EventPayloads, EventType } from './event-types'

export interface OutboxEvent<T extends EventType = EventType> {
  orgId: string
  appId: string | null
  type: T
  data: EventPayloads[T]
}

export interface StoredEvent {
  id: string
  orgId: string
  appId: string | null
  seq: number
  type: string
  data: Record<string, unknown>
  createdAt: number
}

export function createOutbox(sqlite: Database, clock: Clock) {
  const nextSeq: Statement = sqlite.query(
    `INSERT INTO event_counters (org_id, last_seq) VALUES (?, 1)
     ON CONFLICT (org_id) DO UPDATE SET last_seq = last_seq + 1
     RETURNING last_seq`,
  )
  const insert: Statement = sqlite.query(
    'INSERT INTO events (id, org_id, app_id, seq, type, data, created_at, feedback_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  )

  return {
    /** Must run inside the caller's transaction (see the module comment). Returns the event's seq. */
    append<T extends EventType>(event: OutboxEvent<T>): number {
      if (!sqlite.inTransaction) throw new Error('outbox.append must run inside the transaction of the change')
      const { last_seq: seq } = nextSeq.get(event.orgId) as { last_seq: number }
      // The report's id in its own column: indexed without parsing the JSON (a third of an event's insert).
      const feedbackId = (event.data as { feedbackId?: unknown }).feedbackId
      insert.run(newId(clock), event.orgId, event.appId, seq, event.type, JSON.stringify(event.data), clock.now(), typeof feedbackId === 'string' ? feedbackId : null)
      return seq
    },
  }
}
export type Outbox = ReturnType<typeof createOutbox>
