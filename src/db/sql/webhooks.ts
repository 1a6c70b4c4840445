/**
 * "Which outbox readers have something to do": the webhook dispatcher's endpoints and the Slack
 * notifier's connections that are behind, both dialects (src/db/sqlite/{webhooks,chatops}.ts,
 * src/db/pg/{webhooks,chatops}.ts, each with its placeholder): one text, so the four cannot drift. The
 * rule is the ports' (src/modules/webhooks/repo.ts `behind`, src/modules/chatops/repo.ts `behind`).
 *
 * Behind means: the Org has an event past the reader's cursor, i.e. the cursor is below the Org's
 * newest event (a backward seek on events_org_seq_uq). Not event_counters.last_seq: on SQLite appends
 * never write it (a floor deletes raise), and on both dialects it stays above a deleted newest event,
 * which would leave a reader looking behind on every pass with nothing to read.
 */

/** A table of readers (`cursor_seq` per row, per Org) and which of its rows are live, as its partial index's predicate (so both planners use that index). */
interface Readers {
  table: string
  /** The live rows, `w.` prefixed: the `(org_id, cursor_seq)` partial index's predicate. */
  live: string
}

/** The Org's newest event's seq (NULL without events: nothing is behind). */
const HEAD = (org: string) => `(SELECT MAX(e.seq) FROM events e WHERE e.org_id = ${org})`

function behindSql({ table, live }: Readers) {
  return {
    /**
     * Every Org's live readers that are behind. The Orgs with live readers are walked one index seek
     * each (a loose index scan: the next org_id above the last), then each Org's head is one seek and its
     * readers below it one range of the partial index: an idle pass reads a few index entries per Org and
     * no reader's row.
     */
    behind: `WITH RECURSIVE orgs(org_id) AS (
        SELECT MIN(w.org_id) FROM ${table} w WHERE ${live}
        UNION ALL
        SELECT (SELECT MIN(w.org_id) FROM ${table} w WHERE ${live} AND w.org_id > orgs.org_id) FROM orgs WHERE orgs.org_id IS NOT NULL
      ),
      heads(org_id, head) AS (SELECT orgs.org_id, ${HEAD('orgs.org_id')} FROM orgs WHERE orgs.org_id IS NOT NULL)
      SELECT w.* FROM heads JOIN ${table} w ON w.org_id = heads.org_id AND ${live} AND w.cursor_seq < heads.head
      ORDER BY w.org_id, w.id`,
    /** One Org's live readers that are behind; `org` the Org's placeholder (`?1`, `$1`). */
    behindInOrg: (org: string) => `SELECT w.* FROM ${table} w WHERE w.org_id = ${org} AND ${live} AND w.cursor_seq < ${HEAD(org)} ORDER BY w.id`,
  }
}

/** Webhook endpoints (index webhooks_live_cursor_idx). */
export const WEBHOOK_PASS_SQL = behindSql({ table: 'webhooks', live: 'w.enabled AND w.deleted_at IS NULL' })

/** Slack connections (index slack_connections_live_cursor_idx). */
export const SLACK_PASS_SQL = behindSql({ table: 'slack_connections', live: 'w.deleted_at IS NULL' })
