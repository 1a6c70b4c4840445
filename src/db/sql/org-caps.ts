/**
 * The per-Org caps on webhook endpoints and Slack connections (FIXLOOP_WEBHOOKS_PER_ORG,
 * FIXLOOP_SLACK_CONNECTIONS_PER_ORG), held in the insert's own transaction on both dialects
 * (src/db/{sqlite,pg}/{webhooks,chatops}.ts): a check before the insert let creates racing at the cap
 * pass it by as many as raced.
 */

/** The Org's live rows of a capped table; `org` is the side's placeholder. */
export const liveCountSql = (table: 'webhooks' | 'slack_connections', org: string) =>
  `SELECT COUNT(*) AS n FROM ${table} WHERE org_id = ${org} AND deleted_at IS NULL`

/**
 * PostgreSQL: one Org's capped inserts queue behind each other until commit (under READ COMMITTED two
 * could each count the other's row as not there yet). SQLite needs nothing: its writes are serial.
 * `$1` is `<table>:<orgId>`.
 */
export const PG_CAP_LOCK = 'SELECT pg_advisory_xact_lock(hashtextextended($1, 0))'
