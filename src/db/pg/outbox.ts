/**
 * Appends events on PostgreSQL, inside the transaction of the change they record (the row and its event
 * commit together or not at all).
 *
 * seq comes from the Org's counter row, bumped in the same transaction: the row lock orders seq by
 * commit — a second transaction appending for the same Org waits at the bump until the first commits or
 * rolls back — so a reader paging by `seq > after` never skips one (seq N is visible before N+1 is handed
 * out), and no seq is reused. The counter is only ever raised (retention deletes events, not counters).
 */
import type { Clock } from '../../core/clock'
import { newId } from '../../core/ids'
import type { OutboxEvent } from '../../lifecycle/event-types'
import type { PgQueryable } from './storage'

const BUMP_SEQ = `INSERT INTO event_counters (org_id, last_seq) VALUES ($1, 1)
  ON CONFLICT (org_id) DO UPDATE SET last_seq = event_counters.last_seq + 1 RETURNING last_seq`
const INSERT_EVENT = 'INSERT INTO events (id, org_id, app_id, seq, type, data, created_at, feedback_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)'

/** The last seq an Org has had (0 for none). */
export const PG_LAST_SEQ_SQL = 'SELECT COALESCE((SELECT last_seq FROM event_counters WHERE org_id = $1), 0) AS last_seq'

/** Appends one event in the caller's transaction (`q` must be that transaction's client); its seq. */
export async function appendEventPg(q: PgQueryable, clock: Clock, event: OutboxEvent): Promise<number> {
  const { rows } = await q.query<{ last_seq: number }>(BUMP_SEQ, [event.orgId])
  const seq = rows[0].last_seq
  // The report's id in its own column: indexed without parsing the JSON.
  const feedbackId = (event.data as { feedbackId?: unknown }).feedbackId
  await q.query(INSERT_EVENT, [newId(clock), event.orgId, event.appId, seq, event.type, JSON.stringify(event.data), clock.now(), typeof feedbackId === 'string' ? feedbackId : null])
  return seq
}
