/**
 * The one clock of a cluster: the database's. Nodes' clocks drift (a node three minutes ahead once took
 * the job leases other nodes still held, and ran every job twice), so on PostgreSQL every lease and every
 * "is it due yet" is compared in SQL with the server's time, never with a time a node passes in.
 * docs/operations.md "Which clock decides" lists what follows it.
 */
import type { OffsetClock } from '../../core/clock'
import type { PgQueryable } from './storage'

/** The database clock in epoch ms (clock_timestamp: the time of the statement, not of its transaction). */
export const DB_NOW = '(extract(epoch from clock_timestamp()) * 1000)::bigint'

/**
 * The "now" a statement compares with, as a scalar subquery (evaluated once per statement, so an index
 * on the compared column still serves): the database clock, unless the caller's `$n` is not null (a
 * store opened with `callerClock`: tests that drive time by hand). `param` is the placeholder, e.g. `$1`.
 */
export const nowOr = (param: string): string => `(SELECT COALESCE(${param}::bigint, ${DB_NOW}))`

/** Sets `clock` to the database's clock (one round trip: the midpoint of its send and its answer). */
export async function alignToDatabase(clock: OffsetClock, q: PgQueryable): Promise<void> {
  const before = Date.now()
  const { rows } = await q.query<{ now: string }>(`SELECT ${DB_NOW} AS now`)
  clock.observe(Number(rows[0].now), before, Date.now())
}
