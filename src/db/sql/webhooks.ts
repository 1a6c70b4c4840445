/**
 * The webhook dispatcher's "which endpoints have something to fan out" reads, both dialects
 * (src/db/sqlite/webhooks.ts, src/db/pg/webhooks.ts, each with its placeholder): one text, so
 * the two cannot drift. The rule is the port's (src/modules/webhooks/repo.ts `behind`).
 *
 * Behind means: the Org has an event past the endpoint's cursor, i.e. the cursor is below the Org's
 * newest event (a backward seek on events_org_seq_uq). Not event_counters.last_seq: on SQLite appends
 * never write it (a floor deletes raise), and on both dialects it stays above the newest event when that
 * event is deleted, which would leave an endpoint looking behind on every pass with nothing to fan out.
 */

/** A live endpoint, written as webhooks_live_cursor_idx's predicate so both planners use that index. */
const LIVE = 'w.enabled AND w.deleted_at IS NULL'

/** The Org's newest event's seq (NULL without events: nothing is behind). */
const HEAD = (org: string) => `(SELECT MAX(e.seq) FROM events e WHERE e.org_id = ${org})`

export const WEBHOOK_PASS_SQL = {
  /**
   * Every Org's live endpoints that are behind. The Orgs with live endpoints are walked one index seek
   * each (a loose index scan: the next org_id above the last), then each Org's head is one seek and its
   * endpoints below it one range of webhooks_live_cursor_idx: an idle pass reads a few index entries per
   * Org and no endpoint row.
   */
  behind: `WITH RECURSIVE orgs(org_id) AS (
      SELECT MIN(w.org_id) FROM webhooks w WHERE ${LIVE}
      UNION ALL
      SELECT (SELECT MIN(w.org_id) FROM webhooks w WHERE ${LIVE} AND w.org_id > orgs.org_id) FROM orgs WHERE orgs.org_id IS NOT NULL
    ),
    heads(org_id, head) AS (SELECT orgs.org_id, ${HEAD('orgs.org_id')} FROM orgs WHERE orgs.org_id IS NOT NULL)
    SELECT w.* FROM heads JOIN webhooks w ON w.org_id = heads.org_id AND ${LIVE} AND w.cursor_seq < heads.head
    ORDER BY w.org_id, w.id`,
  /** One Org's live endpoints that are behind; `org` the Org's placeholder (`?1`, `$1`). */
  behindInOrg: (org: string) => `SELECT w.* FROM webhooks w WHERE w.org_id = ${org} AND ${LIVE} AND w.cursor_seq < ${HEAD(org)} ORDER BY w.id`,
}
