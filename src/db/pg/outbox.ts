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
import { prepared, type PgQueryable } from './storage'
import { noteEventsAppended } from './event-signal'

/**
 * The Org's counter bumped and the event's row inserted in ONE statement: one round trip instead of two,
 * and the counter row (which every append of the Org waits on) is locked for one round trip less
 * (bench/pg-intake.ts). `$first` is the Org; numbered from `first` so a caller can put it after a
 * statement of its own (lifecycle `received`). Parameters after the bump are cast: in `INSERT … SELECT` PostgreSQL
 * would otherwise type them as text.
 */
/**
 * A caller that runs these parts itself tells the live fan-out with `noteEventsAppended` (event-signal.ts),
 * naming the Org and its new last seq (`counter.last_seq`: the statement returns it).
 */
export function appendEventParts(first: number, onlyIf?: string): { counter: string; insert: string } {
  // `onlyIf`: a CTE of the same statement; the bump (and so the event) happens only when it has a row.
  const bump = onlyIf ? `SELECT $${first}::text, 1 FROM ${onlyIf}` : `VALUES ($${first}::text, 1)`
  return {
    counter: `counter AS (INSERT INTO event_counters (org_id, last_seq) ${bump}
    ON CONFLICT (org_id) DO UPDATE SET last_seq = event_counters.last_seq + 1 RETURNING last_seq)`,
    insert: `INSERT INTO events (id, org_id, app_id, seq, type, data, created_at, feedback_id)
    SELECT $${first + 1}::text, $${first}::text, $${first + 2}::text, counter.last_seq, $${first + 3}::text, $${first + 4}::text, $${first + 5}::bigint, $${first + 6}::text FROM counter`,
  }
}
const APPEND_PARTS = appendEventParts(1)
const APPEND_EVENT = `WITH ${APPEND_PARTS.counter}\n  ${APPEND_PARTS.insert} RETURNING seq`

/** The last seq an Org has had (0 for none). */
export const PG_LAST_SEQ_SQL = 'SELECT COALESCE((SELECT last_seq FROM event_counters WHERE org_id = $1), 0) AS last_seq'

/** Appends one event in the caller's transaction (`q` must be that transaction's client); its seq. */
export async function appendEventPg(q: PgQueryable, clock: Clock, event: OutboxEvent): Promise<number> {
  const { rows } = await q.query<{ seq: number }>(prepared(APPEND_EVENT, appendEventParams(clock, event)))
  noteEventsAppended(q, [[event.orgId, rows[0].seq]])
  return rows[0].seq
}

/** appendEventParts's parameters, in order: Org, event id, App, type, data, created_at, feedback id. */
export function appendEventParams(clock: Clock, event: OutboxEvent): unknown[] {
  // The report's id in its own column: indexed without parsing the JSON.
  const feedbackId = (event.data as { feedbackId?: unknown }).feedbackId
  return [event.orgId, newId(clock), event.appId, event.type, JSON.stringify(event.data), clock.now(), typeof feedbackId === 'string' ? feedbackId : null]
}

// Several events of ONE Org in one statement: the counter bumped by their count, the events numbered
// below the new value in the given order ($1 the Org, $2 the count, then one array per column).
const APPEND_MANY = `WITH counter AS (INSERT INTO event_counters (org_id, last_seq) VALUES ($1::text, $2::bigint)
    ON CONFLICT (org_id) DO UPDATE SET last_seq = event_counters.last_seq + excluded.last_seq RETURNING last_seq)
  INSERT INTO events (id, org_id, app_id, seq, type, data, created_at, feedback_id)
  SELECT e.id, $1::text, e.app_id, counter.last_seq - $2::bigint + e.ord, e.type, e.data, e.created_at, e.feedback_id
  FROM counter, unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[]) WITH ORDINALITY AS e(id, app_id, type, data, created_at, feedback_id, ord)
  RETURNING seq`

/**
 * Appends several events of one Org, in order, in the caller's transaction: one round trip (a report's
 * way through received → sanitizing → sanitized records two). Seqs as `appendEventPg` would give them one
 * after another.
 */
export async function appendEventsPg(q: PgQueryable, clock: Clock, events: OutboxEvent[]): Promise<void> {
  if (events.length === 0) return
  if (events.length === 1) return void (await appendEventPg(q, clock, events[0]))
  const orgId = events[0].orgId
  if (events.some((e) => e.orgId !== orgId)) throw new Error('appendEventsPg appends the events of one Org')
  const rows = events.map((e) => appendEventParams(clock, e))
  // appendEventParams's order: Org, event id, App, type, data, created_at, feedback id.
  const out = await q.query<{ seq: number }>(prepared(APPEND_MANY, [orgId, events.length, rows.map((r) => r[1]), rows.map((r) => r[2]), rows.map((r) => r[3]), rows.map((r) => r[4]), rows.map((r) => r[5]), rows.map((r) => r[6])]))
  noteEventsAppended(q, [[orgId, Math.max(...out.rows.map((r) => r.seq))]])
}

// Events of several Orgs in one statement (the processing engine's batch): each Org's counter bumped once
// by its count, its events numbered below the new value in the given order. Columns as appendEventParams.
// Answers each Org's new last seq (the live fan-out's news, event-signal.ts).
const APPEND_ACROSS_ORGS = `WITH input AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[])
      WITH ORDINALITY AS t(org_id, id, app_id, type, data, created_at, feedback_id, ord)),
  counter AS (INSERT INTO event_counters (org_id, last_seq) SELECT org_id, count(*) FROM input GROUP BY org_id ORDER BY org_id
    ON CONFLICT (org_id) DO UPDATE SET last_seq = event_counters.last_seq + excluded.last_seq RETURNING org_id, last_seq),
  appended AS (INSERT INTO events (id, org_id, app_id, seq, type, data, created_at, feedback_id)
    SELECT i.id, i.org_id, i.app_id, c.last_seq - count(*) OVER (PARTITION BY i.org_id) + row_number() OVER (PARTITION BY i.org_id ORDER BY i.ord),
      i.type, i.data, i.created_at, i.feedback_id
    FROM input i JOIN counter c ON c.org_id = i.org_id)
  SELECT org_id, last_seq FROM counter`

/**
 * Appends events of any Orgs, in order, in the caller's transaction: one round trip for a whole batch.
 * Each Org's events get the seqs `appendEventPg` would give them one after another (the counter rows are
 * locked by the bump until the commit, as for one event).
 */
export async function appendEventsAcrossOrgs(q: PgQueryable, clock: Clock, events: OutboxEvent[]): Promise<void> {
  if (events.length === 0) return
  const rows = events.map((e) => appendEventParams(clock, e))
  const column = (k: number) => rows.map((r) => r[k])
  const { rows: counters } = await q.query<{ org_id: string; last_seq: number }>(prepared(APPEND_ACROSS_ORGS, [column(0), column(1), column(2), column(3), column(4), column(5), column(6)]))
  noteEventsAppended(q, counters.map((c) => [c.org_id, c.last_seq] as const))
}
