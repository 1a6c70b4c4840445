/** PostgreSQL side of src/db/sql/org-caps.ts: the Org's capped inserts queued, then counted. */
import type { PoolClient } from 'pg'
import { liveCountSql, PG_CAP_LOCK } from '../sql/org-caps'
import { one } from './storage'

/** Whether the Org has fewer than `max` live rows in `table`; holds the Org's cap lock until the transaction ends. */
export async function underCap(c: PoolClient, table: 'webhooks' | 'slack_connections', orgId: string, max: number): Promise<boolean> {
  await c.query(PG_CAP_LOCK, [`${table}:${orgId}`])
  return Number((await one<{ n: string | number }>(c, liveCountSql(table, '$1'), [orgId]))!.n) < max
}
